"""Training on a host environment (Procgen, gymnasium): the PLR paper's loop, with the learner compiled.

One update, top to bottom (`HostRun.update`):
1. `num_steps` times: the jitted policy acts for all envs; the envs step on the host; for every env
   whose episode ended, the level sampler picks the next level and the env is forced onto it (the
   reference's `VecPyTorchProcgen.step_wait`); rewards are normalised by the running return std.
2. One jitted call: GAE, PPO targets and the sampler's per-step score terms.
3. The sampler scores the rollout's episodes (`update_with_rollout`).
4. One jitted PPO update; then the sampler's `after_update` (the reference's order).
Robust PLR (`--method robust_plr`) starts each rollout with one replay decision and forces every env
onto a replayed (or a new) level, restarts an ended episode on the same level, and skips step 4's
update after a rollout of new levels (`gradient_updates` counts the updates; `update` counts rollouts).
Then logs, periodic evaluation on unseen test levels and on training levels, checkpoints.

The run lasts `--num-updates` units of `--budget`: PPO updates (`updates`; robust PLR's rollouts of new
levels do not count) or rollouts of `--num-envs` x `--num-steps` env steps (`env_steps`).

A checkpoint holds the train state (Orbax) and, beside it, everything on the host the next update
reads (the envs' states, the sampler with its random stream, the return normaliser, the current
observations, the open episodes' returns, the key), stored as data (`checkpoints.py`): a resumed run
continues exactly.
"""

from __future__ import annotations

import signal
import sys
import time
from collections import deque
from pathlib import Path

import jax
import numpy as np

from minimax.training.checkpoint import CheckpointError
from minimax.host.checkpoints import HostCheckpoints
from minimax.host.level_sampler import LevelSampler
from minimax.host.return_normalizer import ReturnNormalizer
from minimax.envs.host import make_host_env
from minimax.host.config import HostTrainConfig, parse_host_config
from minimax.host.scoring import evaluate_levels, return_summary, test_levels
from minimax.host.learner import HostLearner, host_model
from minimax.core.options import ConfigError
from minimax.core.units import LABEL
from minimax.training.devices import committed
from minimax.training.progress import Progress
from minimax.training.run_dirs import RunError, missing_dirs, prepare_run_dir, remove_unkept
from minimax.training.run_lock import RunLock
from minimax.training.run_logs import RunLogger
from minimax.training.stop_signals import RunStopped, StopSignals

COLUMNS = ["update", "env_steps", "gradient_updates", "trained", "seconds", "sps", "train_return", "episodes",
           "policy_loss", "value_loss", "entropy", "approx_kl", "explained_variance", "sampler/seen_fraction",
           "sampler/replay_entropy", "sampler/mean_score", "sampler/max_score", "test_return", "train_levels_return",
           "generalization_gap", "test_normalized", "train_levels_normalized", "env_fraction", "update_fraction",
           "sampler_seconds", "final_test_return", "final_train_levels_return", "final_generalization_gap",
           "final_test_normalized", "final_train_levels_normalized"]


EXIT_RERUN = 3
"""Exit status of a run stopped by `--time-limit` (checkpointed): rerun it with `--resume` to continue."""


class TimeLimitReached(Exception):
    """`--time-limit` passed; the run is checkpointed at `update`."""

    def __init__(self, update: int, seconds: float):
        super().__init__(f"--time-limit: stopped after {seconds:.0f}s at update {update} (checkpointed); "
                         f"rerun with --resume to continue")


class HostRun:
    """The state of one host-environment run and its update (see the module docstring)."""

    def __init__(self, cfg: HostTrainConfig):
        self.cfg = cfg
        self.env = make_env(cfg, cfg.num_envs, cfg.seed)
        self.model = host_model(cfg.env, self.env.obs_shape, self.env.num_actions, cfg.impala_channels, cfg.hidden)
        sampler_cfg = cfg.sampler_config
        self.learner = HostLearner(self.model, cfg.ppo, sampler_cfg.score_function)
        self.sampler = LevelSampler(np.arange(cfg.level_seeds.start, cfg.level_seeds.stop), cfg.num_envs,
                                    sampler_cfg, rng_seed=cfg.seed)
        self.normalizer = ReturnNormalizer(cfg.num_envs) if cfg.normalize_returns else None
        key, init_key = jax.random.split(jax.random.key(cfg.seed))
        self.key = key
        self.obs = self.env.reset(np.array([self.sampler.sample_sequential() for _ in range(cfg.num_envs)]))
        self.train_state = committed(self.learner.init(init_key, self.obs[0]))  # as a restored one is
        self.open_returns = np.zeros(cfg.num_envs)
        self.recent = deque(maxlen=100)   # returns of the last 100 finished training episodes
        self.update_count = 0
        self.gradient_updates = 0
        self.robust = cfg.protocol == "robust"

    @property
    def units_done(self) -> int:
        """Units of `--budget` spent: PPO updates, or rollouts (batches of num_envs x num_steps env steps)."""
        return self.gradient_updates if self.cfg.budget == "updates" else self.update_count

    # ------------------------------------------------------------------ one update
    def _start_robust_rollout(self) -> bool:
        """Robust PLR: one replay decision, every env forced onto a level drawn by it; whether it replays."""
        replay = self.sampler.replay_decision()
        draw = self.sampler.sample_replay if replay else self.sampler.sample_new
        levels = np.array([draw() for _ in range(self.cfg.num_envs)], np.int64)
        self.obs = self.env.set_levels(np.arange(self.cfg.num_envs), levels)
        self.open_returns[:] = 0.0  # the cut episodes are not finished ones
        if self.normalizer is not None:
            self.normalizer.reset()
        return replay

    def _next_levels(self, ended, played):
        """The levels of the envs whose episode ended: the sampler's, or (robust PLR) the same again."""
        return played[ended] if self.robust else np.array([self.sampler.sample() for _ in ended], np.int64)

    def _rollout(self, key):
        """`num_steps` steps of every env: the arrays the update reads, the finished episodes' returns,
        the seconds spent in the envs (stepping and forcing levels) and in the sampler's draws."""
        env, T, N = self.env, self.cfg.num_steps, self.cfg.num_envs
        obs_buf = np.empty((T, N) + tuple(self.obs.shape[1:]), self.obs.dtype)
        levels, dones = np.empty((T, N), np.int64), np.empty((T, N), bool)
        rewards = np.empty((T, N), np.float32)
        out, finished, env_seconds, sampler_seconds = [], [], 0.0, 0.0
        for t in range(T):
            obs_buf[t] = self.obs
            action, log_prob, value, logits = self.learner.act(self.train_state.params, jax.random.fold_in(key, t),
                                                               self.obs)
            out.append((action, log_prob, value, logits))
            actions = np.asarray(action)
            tick = time.perf_counter()
            step = env.step(actions)
            env_seconds += time.perf_counter() - tick
            levels[t], dones[t] = step.level, step.done
            self.open_returns += step.reward
            rewards[t] = step.reward if self.normalizer is None else self.normalizer.normalize(step.reward, step.done)
            ended = np.flatnonzero(step.done)
            obs = step.obs
            if ended.size:
                finished.extend(self.open_returns[ended].tolist())
                self.open_returns[ended] = 0.0
                tick = time.perf_counter()
                next_levels = self._next_levels(ended, step.level)
                sampler_seconds += time.perf_counter() - tick
                obs = np.array(obs, copy=True)
                tick = time.perf_counter()
                obs[ended] = env.set_levels(ended, next_levels)
                env_seconds += time.perf_counter() - tick
            self.obs = obs
        stacked = [np.stack([np.asarray(o[i]) for o in out]) for i in range(4)]
        return obs_buf, levels, dones, rewards, stacked, finished, env_seconds, sampler_seconds

    def update(self) -> dict:
        """One rollout, its scores and one PPO update; returns the log row's values."""
        key, roll_key, ppo_key = jax.random.split(self.key, 3)
        start = time.perf_counter()
        trains = self._start_robust_rollout() if self.robust else True
        forcing_s = time.perf_counter() - start  # robust PLR: every env forced onto its level (draws included)
        rollout = self._rollout(roll_key)
        obs_buf, levels, dones, rewards, (actions, log_probs, values, logits), finished, env_s, sampler_s = rollout
        env_s += forcing_s
        advantages, targets, terms = self.learner.finish(self.train_state.params, self.obs, rewards, values, dones,
                                                         logits)
        tick = time.perf_counter()
        self.sampler.update_with_rollout(levels, dones, np.asarray(terms))
        sampler_s += time.perf_counter() - tick
        batch = self.learner.batch(obs_buf, actions, log_probs, values, advantages, targets)
        tick = time.perf_counter()
        metrics = {}
        if trains:
            self.train_state, metrics = self.learner.update(ppo_key, self.train_state, batch)
            metrics = jax.device_get(metrics)
            self.gradient_updates += 1
        update_s = time.perf_counter() - tick
        tick = time.perf_counter()
        self.sampler.after_update()
        sampler_s += time.perf_counter() - tick
        self.key, self.update_count = key, self.update_count + 1
        self.recent.extend(finished)
        seconds = time.perf_counter() - start
        row = {k: float(v) for k, v in metrics.items()}
        row.update(self.sampler.stats())
        row.update(episodes=len(finished), gradient_updates=self.gradient_updates, trained=float(trains),
                   seconds=seconds, sps=self.cfg.num_envs * self.cfg.num_steps / seconds,
                   train_return=float(np.mean(self.recent)) if self.recent else None,
                   env_fraction=env_s / seconds, update_fraction=update_s / seconds, sampler_seconds=sampler_s)
        return row

    # ------------------------------------------------------------------ checkpoints
    def host_state(self) -> dict:
        return {"env": self.env.get_state(), "sampler": self.sampler.state_dict(), "obs": self.obs,
                "normalizer": None if self.normalizer is None else self.normalizer.state_dict(),
                "open_returns": self.open_returns, "recent": list(self.recent), "update": self.update_count,
                "gradient_updates": self.gradient_updates,
                "key": np.asarray(jax.random.key_data(self.key))}

    def load_host_state(self, state: dict):
        self.env.set_state(state["env"])
        self.sampler.load_state_dict(state["sampler"])
        if self.normalizer is not None:
            self.normalizer = ReturnNormalizer.from_state_dict(state["normalizer"])
        self.obs, self.open_returns = np.asarray(state["obs"]), np.asarray(state["open_returns"])
        self.recent = deque(state["recent"], maxlen=100)
        self.update_count = int(state["update"])
        self.gradient_updates = int(state.get("gradient_updates", self.update_count))
        self.key = jax.random.wrap_key_data(np.asarray(state["key"]))

    def close(self):
        self.env.close()


def make_env(cfg: HostTrainConfig, num_envs: int, seed: int):
    """The run's host env with `num_envs` slots; an env that cannot be made is a one-line `ConfigError`."""
    try:
        return make_host_env(cfg.env, num_envs, distribution_mode=cfg.distribution_mode, seed=seed)
    except ValueError as e:
        raise ConfigError(f"--env {cfg.env}: {e}") from None


def _evaluate(run: HostRun, eval_env, episodes: int, update: int) -> dict:
    """Mean returns on `episodes` unseen test levels and `episodes` training levels, and the gap."""
    cfg = run.cfg
    rng = np.random.default_rng([cfg.seed, update])
    tests = test_levels(rng, episodes, exclude=cfg.level_seeds)
    trains = rng.choice(np.arange(cfg.level_seeds.start, cfg.level_seeds.stop), episodes)
    key = jax.random.fold_in(jax.random.key(cfg.seed + 1), update)
    test = evaluate_levels(run.learner, run.train_state.params, eval_env, tests, key)
    train = evaluate_levels(run.learner, run.train_state.params, eval_env, trains, jax.random.fold_in(key, 1))
    return return_summary(cfg.env, cfg.distribution_mode, test, train)


def _start(cfg: HostTrainConfig, lock: RunLock):
    """The run, its checkpoints, logger and evaluation env, restored where `--resume`, in its run directory
    (`training/run_dirs.py`, as the compiled path's: checked, created or emptied, locked by `lock`). A start that
    fails removes the directories it made (an existing run's is left as it was)."""
    created = [] if cfg.resume else missing_dirs(cfg.run_dir)
    run = eval_env = None
    try:
        prepare_run_dir(cfg, lock)
        run = HostRun(cfg)
        checkpoints = HostCheckpoints(cfg.run_dir)
        if cfg.resume:
            checkpoints.restore(run)
        eval_env = make_env(cfg, min(cfg.num_envs, cfg.eval_episodes), cfg.seed + 1)
        logger = RunLogger(cfg.run_dir, COLUMNS)
    except BaseException:
        for thing in (eval_env, run):
            if thing is not None:
                thing.close()
        lock.release()
        remove_unkept(created)
        raise
    if cfg.resume:  # a fresh run's config was saved by `prepare_run_dir`; a resumed one's may extend the run
        logger.truncate_after(run.update_count)
        cfg.save(cfg.run_dir / "config.json")
    return run, checkpoints, logger, eval_env


def _warn_robust_horizon(run: HostRun) -> None:
    cfg, limit = run.cfg, getattr(run.env, "max_episode_steps", None)
    if run.robust and limit and cfg.num_steps < limit:
        print(f"warning: --method robust_plr restarts every env at each rollout, so with --num-steps {cfg.num_steps} "
              f"against episodes of up to {limit} steps the student trains only on the first {cfg.num_steps} steps "
              f"of each level's episodes", file=sys.stderr)


def train(cfg: HostTrainConfig) -> Path:
    """Run (or resume) a host-environment training run; returns its directory. The run directory is locked for
    the whole run; SIGTERM / SIGINT stop it after the update in flight, with a checkpoint, by raising
    `RunStopped` (`training/stop_signals.py`, as the compiled path's)."""
    cfg.validate()
    lock = RunLock(cfg.run_dir)  # taken by `_start` once the directory is checked (`prepare_run_dir`)
    with StopSignals() as stop:
        run, checkpoints, logger, eval_env = _start(cfg, lock)
        try:
            _loop(cfg, run, checkpoints, logger, eval_env, stop)
        finally:
            logger.close()
            eval_env.close()
            run.close()
            lock.release()
    return cfg.run_dir


def pace_note(seconds: float, units_per_update: float, units_left: float, unit: str) -> str | None:
    """A word on a long run's cost after its first update (host environments at their default sizes on a CPU
    take minutes per update: Procgen about 7 here), when the rest would take over 10 minutes at that pace."""
    left = seconds * units_left / max(units_per_update, 1e-12)
    if left < 600:
        return None
    span = f"{left / 3600:.1f} hours" if left >= 3600 else f"{left / 60:.0f} minutes"
    return (f"note: the first update took {seconds:.0f} s here; the {units_left:g} {unit} left take about {span} at "
            "this pace (--progress shows the pace as it goes; smaller --num-envs / --num-steps cost less)")


def _loop(cfg: HostTrainConfig, run: HostRun, checkpoints, logger, eval_env, stop: StopSignals) -> None:
    """Updates until the budget is spent (or `--time-limit`, or a stop signal): logs, evaluations, checkpoints."""
    _warn_robust_horizon(run)
    total, started, per = cfg.num_updates, time.perf_counter(), cfg.env_steps_per_update
    progress = Progress(total, run.units_done, run.update_count * per, enabled=cfg.progress, unit=LABEL[cfg.budget])
    first = True
    try:
        while run.units_done < total:
            before = run.units_done
            row = run.update()
            u, env_steps = run.update_count, run.update_count * per
            note = pace_note(row["seconds"], run.units_done - before, total - run.units_done, LABEL[cfg.budget])
            if first and note and not cfg.progress:
                print(note, file=sys.stderr)
            first = False
            last = run.units_done >= total
            if cfg.eval_every and (u % cfg.eval_every == 0 or last):
                row.update(_evaluate(run, eval_env, cfg.eval_episodes, u))
            if last:
                final = _evaluate(run, eval_env, cfg.final_eval_episodes, u)
                row.update({f"final_{k}": v for k, v in final.items()})
            if u % cfg.log_every == 0 or last or stop.requested:
                logger.log({"update": u, "env_steps": env_steps, **row})
            out_of_time = cfg.time_limit > 0 and time.perf_counter() - started >= cfg.time_limit and not last
            if u % cfg.checkpoint_every == 0 or last or out_of_time or stop.requested:
                checkpoints.save(run)
            progress.advance(run.units_done, env_steps, row["sps"], row["train_return"])
            if stop.requested and not last:
                raise RunStopped(f"stopped by {signal.Signals(stop.requested).name} after update {u} (checkpointed); "
                                 f"continue with: python train.py --resume --out-dir {cfg.out_dir} --run-name "
                                 f"{cfg.run_dir.name}", u, stop.requested)
            if out_of_time:
                raise TimeLimitReached(u, time.perf_counter() - started)
    finally:
        progress.close()


def main(argv: list[str]) -> None:
    """`python train.py --env procgen-<game> ...` (dispatched here by `minimax.cli.train.main`)."""
    try:
        run_dir = train(parse_host_config(argv))
        print(f"run written to {run_dir}\nevaluate it with: python evaluate.py {run_dir}", file=sys.stderr)  # as compiled runs end
    except TimeLimitReached as e:
        print(str(e), file=sys.stderr)
        raise SystemExit(EXIT_RERUN) from None
    except RunStopped as e:
        print(e, file=sys.stderr)
        raise SystemExit(e.exit_status) from None
    except (ConfigError, RunError, CheckpointError, ModuleNotFoundError) as e:
        print(f"error: {e}", file=sys.stderr)
        raise SystemExit(2) from None
