"""The configuration of a training run on a host environment (Procgen, gymnasium): the PLR paper's protocol.

A host environment steps on the CPU in its own code (`minimax.envs.host`), so its runs have their
own config: the env's levels are integer seeds from a finite training set (`--train-levels` from
`--start-level`), the curriculum is the reference's `LevelSampler` (`SamplerConfig`), and the
student is the IMPALA ResNet of the PLR paper. The defaults are the paper's Procgen protocol
(facebookresearch/level-replay's `train.py`): 64 envs x 256 steps, PPO 3 epochs x 8 minibatches,
Adam 5e-4 (eps 1e-5), gamma 0.999, lambda 0.95, entropy 0.01, value 0.5, clip 0.2 (policy and
value), grad norm 0.5, return normalisation (running, gamma 0.99, clip 10), 1,526 updates (25M env
steps), 200 training levels in easy mode. `--method plr` is PLR (l1_value_loss, the paper's value_l1;
rank, beta 0.1, staleness 0.1); `--method dr` is the paper's uniform baseline (each episode a
uniform training level). `--method robust_plr` is robust PLR (PLR⊥, Jiang et al. 2021b, as
facebookresearch/dcd runs it): one replay decision per rollout, every env forced onto a replayed
level or onto a new one for the whole rollout (an episode that ends restarts the same level), and a
PPO update only after replay rollouts; new-level rollouts only score their levels.

The run's own options are the compiled path's dataclass (`config/run.py: RunOptions`: `--seed`,
`--run-name`, `--num-updates`, `--budget`, `--num-envs`, cadences, `--resume`, ...), with the PLR
paper's defaults declared here; the sampler's are the compiled path's names where they mean the same
(`--score-function`, `--score-alpha`, `--greedy-eps`, `--replay-prob`, ...). `--method` is any
registered method with a host protocol (`Method.host`: `uniform`, `sampler` or `robust`). A host
*update* is one rollout of `--num-envs` x `--num-steps` env steps followed by one PPO update.
`--num-updates` counts units of `--budget`: `updates` (PPO updates: robust PLR plays as many
new-level rollouts as it needs in between, as on the compiled path) or `env_steps` / `cycles`
(rollouts of `--num-envs` x `--num-steps` env steps, every one counting, whether it trained or not:
the PLR papers' env-step budgets). For plr and dr, whose every rollout trains, they are the same.
The host path's old option names are refused naming the new ones; saved runs with them still load
(`legacy_options.py`).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from pathlib import Path

import tyro

from minimax.agents.ppo import PPOConfig
from minimax.config.run import RunOptions, run_problems
from minimax.core.methods import get_method, host_method_names
from minimax.core.files import write_atomically
from minimax.config.plugins import PLUGINS, restore, with_records
from minimax.core.options import ConfigError, check, checked, checks_deferred, read_config_json
from minimax.core.versions import with_versions, without_versions
from minimax.host.legacy_options import refuse_old_flags, translate_saved
from minimax.host.level_sampler import SamplerConfig

PROCGEN_PPO = PPOConfig(lr=5e-4, adam_eps=1e-5, gamma=0.999, gae_lambda=0.95, n_epochs=3, n_minibatches=8,
                        clip_eps=0.2, clip_value=True, entropy_coef=0.01, value_coef=0.5, max_grad_norm=0.5)


@dataclasses.dataclass(frozen=True)
class HostTrainConfig(RunOptions):
    """Train a student on a host environment (--env procgen-<game> or gym-<id>) with PLR or uniform levels,
    as the PLR paper's Procgen protocol."""

    # The run options (`config/run.py`), with the PLR paper's protocol's defaults where it has its own.
    method: str = "plr"
    """A method with a host protocol (`Method.host`): plr (the level sampler with --score-function), dr (each
    episode a uniform training level: the paper's baseline), robust_plr (one replay decision per rollout, updates
    only after replays), or one a --plugin registers with host=..."""
    num_updates: int = 1526
    """Length of the run in units of --budget (the default: the PLR paper's 25M env steps of 64 x 256). On a host
    environment a rollout is one cycle of --num-envs x --num-steps env steps, so cycles and env_steps count the
    same: every rollout, whether it trained or not; updates: PPO updates (robust PLR's new-level rollouts do not
    count). --log-every, --eval-every and --checkpoint-every count rollouts (the log's `update`)."""
    num_envs: int = 64
    """Parallel environments (the PLR paper's 64)."""
    log_every: int = 1
    """Write a log row every N rollouts."""
    checkpoint_every: int = 25
    """Save a checkpoint every N rollouts (and at the end)."""

    # The host path's own.
    env: str = "procgen-bigfish"
    """procgen-<game> (the 16 Procgen games) or gym-<gymnasium id> (levels are reset seeds)."""
    distribution_mode: str = "easy"
    """Procgen's distribution mode (easy, hard, ...)."""
    train_levels: int = 200
    """Training levels (the PLR paper's finite training set): seeds --start-level ... --start-level + N - 1."""
    start_level: int = 0
    """First training level seed."""
    normalize_returns: bool = True
    """Scale rewards by a running std of the discounted return (gamma 0.99, clip 10), as the reference."""
    impala_channels: tuple[int, ...] = (16, 32, 32)
    """Channels of the IMPALA ResNet's stages."""
    hidden: int = 256
    """Width of the IMPALA ResNet's last dense layer (image observations), or of the MLP's two layers (vectors)."""
    eval_every: int = 50
    """Evaluate on test and training levels every N rollouts (0: only at the end)."""
    eval_episodes: int = 10
    """Episodes per periodic evaluation, on test levels and on training levels each (the reference's 10)."""
    final_eval_episodes: int = 100
    """Episodes of the final evaluation on test levels (the reference: 1,000)."""
    time_limit: float = 0.0
    """Stop after this many seconds at a checkpoint, with exit status 3 (rerun with --resume to go on); 0 = none.
    For machines lent by the call (a GPU job chained over calls of a few minutes)."""
    ppo: PPOConfig = PROCGEN_PPO
    sampler: SamplerConfig = SamplerConfig()

    def validate(self) -> "HostTrainConfig":
        """Raise one `ConfigError` naming every bad option (called once parsed: tyro would wrap an error
        raised while it builds the config in a box of its own)."""
        check(self, self._rules)
        return self

    def _rules(self, c):
        for problem in run_problems(self):
            c.add(problem)
        c.integer("checkpoint_every", 1)  # the host loop checkpoints by `update % checkpoint_every`
        c.integer("train_levels", 1)
        c.integer("eval_every", 0)
        c.integer("eval_episodes", 1)
        c.integer("final_eval_episodes", 1)
        c.integer("hidden", 1)
        if not self.time_limit >= 0:  # NaN fails too
            c.add(f"--time-limit must be >= 0 seconds (0 = none), got {self.time_limit!r}")
        if self.start_level < 0:
            c.add(f"--start-level must be >= 0, got {self.start_level!r}")
        env_problem = host_env_problem(self.env, self.distribution_mode, self.num_envs)
        if env_problem:
            c.add(env_problem)
        if (self.num_envs * self.num_steps) % self.ppo.n_minibatches:
            c.add(f"--n-minibatches {self.ppo.n_minibatches} must divide --num-envs x --num-steps "
                  f"({self.num_envs * self.num_steps})")
        method_problem = host_method_problem(self.method, self.env)
        if method_problem:
            c.add(method_problem)
        if self.protocol == "robust" and not self.sampler.scored:
            c.add(f"--method robust_plr needs a level score: --score-function l1_value_loss, pvl, ... "
                  f"(not {self.sampler.score_function!r})")
        if self.protocol == "robust" and self.sampler.partial_episodes != "flush":
            c.add("--method robust_plr restarts every env at each rollout, so an episode never continues into the "
                  "next one: --partial-episodes must be flush")
        if self.resume and self.overwrite:
            c.add("--resume continues the run and --overwrite deletes it to start afresh: give one of them")

    # ------------------------------------------------------------------ derived
    @property
    def protocol(self) -> str | None:
        """The host loop's curriculum for `--method` (`core/methods.py: HOST_PROTOCOLS`); None if it has none."""
        try:
            return get_method(self.method).host
        except ValueError:
            return None

    @property
    def name(self) -> str:
        """`--run-name`, else `<method>-seed<s>`, as the compiled path names a run of a preset's method."""
        return self.run_name or f"{self.method}-seed{self.seed}"

    @property
    def legacy_name(self) -> str:
        """The directory name host runs got before they were named as the compiled path's: `<env>+<method>-seed<s>`."""
        return f"{self.env}+{self.method}-seed{self.seed}"

    @property
    def run_dir(self) -> Path:
        return Path(self.out_dir) / self.name

    @property
    def env_steps_per_update(self) -> int:
        return self.num_envs * self.num_steps

    @property
    def level_seeds(self) -> range:
        """The training levels' seeds."""
        return range(self.start_level, self.start_level + self.train_levels)

    @property
    def sampler_config(self) -> SamplerConfig:
        """The sampler the method runs: the configured one for plr, uniform over the training levels for dr."""
        return self.sampler if self.protocol != "uniform" else dataclasses.replace(self.sampler,
                                                                                   score_function="random")

    # ------------------------------------------------------------------ files
    def to_dict(self) -> dict:
        out = dataclasses.asdict(self)
        out["ppo"] = {f.name: getattr(self.ppo, f.name) for f in dataclasses.fields(self.ppo)}
        out["impala_channels"] = list(self.impala_channels)
        out["kind"] = "host"
        return out

    def save(self, path) -> None:
        """`config.json`, with the versions the run ran with under `versions` (ignored by `load`) and the plugins
        its names come from under `plugins` (`config/plugins.py`: `load` imports them again)."""
        saved = with_records(with_versions(self.to_dict()), self.to_dict())
        write_atomically(Path(path), json.dumps(saved, indent=2) + "\n")

    @classmethod
    def load(cls, path) -> "HostTrainConfig":
        values = without_versions(read_config_json(path))
        restore(values.pop(PLUGINS, []), str(path))
        values = translate_saved(values)  # runs saved with the old names load as today's
        values.pop("kind", None)
        try:
            values["ppo"] = PPOConfig(**values["ppo"])
            values["sampler"] = SamplerConfig(**values["sampler"])
            values["impala_channels"] = tuple(values["impala_channels"])
            return cls(**values).validate()
        except (KeyError, TypeError) as e:
            raise ConfigError(f"config {path} is no host-environment run config: {e}") from None


def host_method_problem(method: str, env: str) -> str | None:
    """What is wrong with `--method` on a host environment (one line naming it and the choices), or None."""
    choices = ", ".join(host_method_names())
    try:
        spec = get_method(method)
    except ValueError:
        return f"--method {method!r} is no registered method; on a host environment (--env {env}): {choices}"
    if spec.host is None:
        return (f"--method {method} runs on the compiled path only (its levels are a UED environment's, not "
                f"--env {env}'s seeds); on a host environment: {choices}")
    return host_rule_problem(spec)


HOST_BASES = {"robust": "robust_plr", "sampler": "plr", "uniform": "dr"}
"""The built-in method whose rule each host protocol runs (`core/methods.py: HOST_PROTOCOLS`)."""
RULE_HOOKS = ("decide_replay", "replay_distribution", "trains_on", "cycle", "step")
"""A runner's methods that make its curriculum's rule: a method that changes one of them has a rule of its own."""


def host_rule_problem(spec) -> str | None:
    """One line where a method declares a host protocol but its runner changes the rule that protocol runs
    (its own `decide_replay`, `replay_distribution`, ...): the host loop would train the protocol's built-in
    method under the method's name (issue 71). None where the runner is the protocol's, or adds nothing to it."""
    base = HOST_BASES[spec.host]
    reference = get_method(base).runner
    if spec.runner is None or spec.runner is reference:
        return None
    changed = [h for h in RULE_HOOKS if getattr(spec.runner, h, None) is not getattr(reference, h, None)]
    if not changed:
        return None
    return (f"--method {spec.name} declares the host form {spec.host!r} (--method {base}'s rule), but its runner "
            f"changes {', '.join(changed)}, which the host loop does not run: train it on a JAX environment, or "
            f"use --method {base} on this one")


def host_env_problem(env: str, distribution_mode: str, num_envs: int) -> str | None:
    """What is wrong with `--env` (one line naming it), or None: not a host env, an unknown Procgen game or
    mode, a gymnasium id its registry does not know. Checked before a run directory is made."""
    if not env.startswith(("procgen-", "gym-")):
        return f"--env {env!r} is no host environment (procgen-<game> or gym-<gymnasium id>)"
    if env.startswith("procgen-"):
        from minimax.envs.host.procgen import validate_procgen_args  # noqa: PLC0415
        try:
            validate_procgen_args(env.removeprefix("procgen-"), distribution_mode, num_envs)
        except ValueError as e:  # the library's argument names, as the command line writes them
            return f"--env {env}: " + str(e).replace("distribution_mode", "--distribution-mode").replace(
                "num_envs", "--num-envs")
        return None
    try:
        import gymnasium  # noqa: PLC0415
    except ImportError as e:
        return f"--env {env}: gymnasium is not importable ({e}); install it with: pip install gymnasium"
    try:
        gymnasium.spec(env.removeprefix("gym-"))
    except gymnasium.error.Error as e:
        first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        return f"--env {env}: no such gymnasium environment ({first})"
    if distribution_mode != "easy":
        return f"--distribution-mode {distribution_mode!r} applies to procgen-* envs only, not --env {env}"
    return None


def is_host_config(path) -> bool:
    """A saved config.json of a host-environment run (`evaluate.py` and `--resume` dispatch on it)."""
    try:
        return json.loads(Path(path).read_text()).get("kind") == "host"
    except (OSError, json.JSONDecodeError, AttributeError):
        return False


RESUME_KEEPS = {"resume", "overwrite", "out_dir", "run_name", "progress", "log_every", "eval_every", "time_limit",
                "checkpoint_every", "num_updates", "final_eval_episodes", "eval_episodes"}
"""What `--resume` may change of a saved run: where it lives, its length, logs, evaluation and checkpoints."""


def _saved_run(known, default: HostTrainConfig) -> HostTrainConfig:
    """The saved config `--resume` continues: at --out-dir/--run-name, else at `<method>-seed<s>`, else (runs
    named before host runs were named as the compiled path's) at `<env>+<method>-seed<s>`."""
    probe = dataclasses.replace(default, **{k: v for k, v in dict(
        run_name=known.run_name, out_dir=known.out_dir, env=known.env, method=known.method,
        seed=None if known.seed is None else _int("--seed", known.seed)).items() if v is not None})
    run_dir = probe.run_dir
    legacy = run_dir.parent / probe.legacy_name
    if not (run_dir / "config.json").exists() and not known.run_name and (legacy / "config.json").exists():
        print(f"note: resuming {legacy}, named as host runs were before they took the compiled path's names",
              file=sys.stderr)
        run_dir = legacy
    path = run_dir / "config.json"
    if not path.exists():
        raise ConfigError(f"--resume: no run to resume at {run_dir} (no config.json)")
    saved = HostTrainConfig.load(path)
    return dataclasses.replace(saved, resume=True, out_dir=str(run_dir.parent), run_name=run_dir.name,
                               time_limit=0.0)  # a limit is per command


def _int(flag: str, text: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise ConfigError(f"{flag} takes an integer, got {text!r}") from None


def parse_host_config(argv: list[str]) -> HostTrainConfig:
    """The command line of a host-environment run (flat flags: `--lr`, `--score-function`; an old host name is
    refused naming the new one, `legacy_options.py`). `--resume` starts from the run's saved config and keeps it:
    only where it lives, its length and the log, evaluation and checkpoint settings may change."""
    argv = list(argv)
    refuse_old_flags(argv)
    pre = argparse.ArgumentParser(add_help=False)
    pre.add_argument("--resume", action="store_true")
    for name in ("run-name", "out-dir", "env", "method", "seed"):
        pre.add_argument(f"--{name}")
    known, _ = pre.parse_known_args(argv)
    saved = None
    if known.resume and "-h" not in argv and "--help" not in argv:
        saved = _saved_run(known, HostTrainConfig())
    with checks_deferred():  # a bad --lr or --score-function is then one line (`checked`), not tyro's box
        cfg = tyro.cli(tyro.conf.OmitArgPrefixes[HostTrainConfig], default=saved or HostTrainConfig(), args=argv,
                       prog="train.py", description=HostTrainConfig.__doc__)
    cfg = dataclasses.replace(cfg, ppo=checked(cfg.ppo), sampler=checked(cfg.sampler))
    cfg.validate()
    if saved is not None:
        given, kept = cfg.to_dict(), dataclasses.replace(saved, resume=False).to_dict()
        changed = [k for k in given if k not in RESUME_KEEPS and given[k] != kept[k]]
        if changed:
            raise ConfigError("--resume keeps the run's saved config; these options differ from it: "
                              + ", ".join(f"--{k.replace('_', '-')} (saved {kept[k]!r}, given {given[k]!r})"
                                          for k in changed))
    return cfg
