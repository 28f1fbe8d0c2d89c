"""Evaluation of a policy on levels: held-out suites, level files, or levels sampled from a generator.

`evaluate_levels` runs a batch of envs, one level each, until every env's *first*
episode is over. The loop is a `lax.while_loop` over chunks of `chunk_steps` steps (a
`lax.scan` inside), so an evaluation costs the steps the longest episode needs, rounded
up to a chunk, never the whole budget: a 99x99 perfect maze with a 20,000-step budget
solved in 300 steps costs 300 steps. Chunks amortise the loop's per-iteration overhead
(a device round trip on GPU) without stepping much past the end.

`EvalRunner` arranges levels x episodes into envs, compiles one program per set of static
env params (AMaze: maze size and step budget), and reports per level: solved rate (the
env's `info["solved"]`), mean return, episode length, and where the environment knows them
(`level_facts`, AMaze: an in-jit shortest path) the optimal return and the gap to it.
`SuiteEvaluator` is the training loop's periodic evaluation on a list of held-out levels.
Nothing here knows an environment: held-out levels follow `envs/registry.py: HeldOutLevel`.
"""

from __future__ import annotations

import functools
from collections import defaultdict
from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np

from minimax.models.recurrent import resolve_unroll
from minimax.envs.trials import TrialParams
from minimax.runners.rollout import count_outcomes, policy_step


def evaluate_levels(key, apply_fn, params, initial_carry, env, env_params, levels, greedy: bool = False,
                    chunk_steps: int = 1, unroll: int = 1):
    """First-episode `return`, `solved` and `length` per env for a batch of levels `[B]`, plus
    `steps`: how many env steps the loop executed (a multiple of `chunk_steps`). In meta-RL trials
    (`envs/trials.py`) the episode is the trial and `solved` the fraction of its episodes solved."""
    n = jax.tree.leaves(levels)[0].shape[0]
    obs, state = jax.vmap(env.reset_to_level, in_axes=(None, 0, None))(key, levels, env_params)
    step = jax.vmap(env.step, in_axes=(0, 0, 0, None))  # per-env keys: stochastic dynamics (craftax's mobs)
    zeros = jnp.zeros((n,), jnp.float32)
    init = dict(key=key, state=state, obs=obs, carry=initial_carry, reset=jnp.ones((n,), bool),
                active=jnp.ones((n,), bool), ret=zeros, solved=jnp.zeros((n,), bool),
                length=jnp.zeros((n,), jnp.int32), t=jnp.zeros((), jnp.int32),
                inner_eps=jnp.zeros((n,), jnp.int32), inner_wins=jnp.zeros((n,), jnp.int32))

    def one_step(c, _):
        key, k_act, k_env = jax.random.split(c["key"], 3)
        carry, action, _, _, _ = policy_step(k_act, apply_fn, params, c["carry"], c["obs"], c["reset"], greedy)
        obs, state, reward, done, info = step(jax.random.split(k_env, n), c["state"], action, env_params)
        active = c["active"]
        ended = active & info.get("episode_done", done)  # a meta-RL trial's episodes (envs/trials.py)
        return dict(key=key, state=state, obs=obs, carry=carry, reset=jnp.zeros_like(c["reset"]),
                    active=active & ~done, ret=c["ret"] + jnp.where(active, reward, 0.0),
                    solved=c["solved"] | (active & info["solved"]),
                    length=c["length"] + active.astype(jnp.int32), t=c["t"] + 1,
                    inner_eps=c["inner_eps"] + ended,
                    inner_wins=c["inner_wins"] + (ended & info.get("episode_solved", info["solved"]))), None

    def cond(c):
        # Every episode ends by `max_steps` (truncation), so this also bounds the loop.
        return jnp.any(c["active"]) & (c["t"] < env_params.max_steps)

    def body(c):
        return jax.lax.scan(one_step, c, None, length=chunk_steps, unroll=min(unroll, chunk_steps))[0]

    out = jax.lax.while_loop(cond, body, init)
    solved = out["solved"]
    if isinstance(env_params, TrialParams):  # a trial's outcome is the rate of its episodes solved: SFL's win rate
        solved = out["inner_wins"] / jnp.maximum(out["inner_eps"], 1)
    return {"return": out["ret"], "solved": solved, "length": out["length"], "steps": out["t"]}


def trace_episode(key, apply_fn, params, initial_carry, env, env_params, level, trace_state, greedy: bool = False):
    """One episode on `level`, recorded for rendering: `trace_state(state)`'s arrays, each with a
    leading axis `[max_steps + 1]` (entry t is after t actions; entries past the end repeat the
    last one), plus `length` and `return`. Stops when the episode ends."""
    budget = env_params.max_steps
    obs, state = env.reset_to_level(key, level, env_params)
    batch = lambda x: x[None]  # noqa: E731  (the policy acts on a batch of one)
    first = trace_state(state)
    record = jax.tree.map(lambda x: jnp.zeros((budget + 1,) + jnp.shape(x), jnp.asarray(x).dtype).at[0].set(x), first)
    init = dict(key=key, state=state, obs=jax.tree.map(batch, obs), carry=initial_carry, reset=jnp.ones((1,), bool),
                done=jnp.zeros((), bool), ret=jnp.zeros((), jnp.float32), t=jnp.zeros((), jnp.int32), record=record)

    def body(c):
        key, k_act, k_env = jax.random.split(c["key"], 3)
        carry, action, _, _, _ = policy_step(k_act, apply_fn, params, c["carry"], c["obs"], c["reset"], greedy)
        obs, state, reward, done, _ = env.step(k_env, c["state"], action[0], env_params)  # no auto-reset
        t = c["t"] + 1
        record = jax.tree.map(lambda r, x: r.at[t].set(x), c["record"], trace_state(state))
        return dict(key=key, state=state, obs=jax.tree.map(batch, obs), carry=carry, reset=jnp.zeros((1,), bool),
                    done=done, ret=c["ret"] + reward, t=t, record=record)

    out = jax.lax.while_loop(lambda c: ~c["done"] & (c["t"] < budget), body, init)
    t = out["t"]
    idx = jnp.minimum(jnp.arange(budget + 1), t)
    return {**jax.tree.map(lambda r: r[idx], out["record"]), "length": t, "return": out["ret"]}


@dataclass(frozen=True)
class LevelResults:
    """Per-level results: arrays `[L, E]` (levels x episodes) of return, solved and length,
    and `[L]` optimal return and solvability (AMaze: a path to the goal exists; NaN and True
    where the environment has no `level_facts`)."""

    returns: np.ndarray
    solved: np.ndarray
    length: np.ndarray
    optimal_return: np.ndarray
    solvable: np.ndarray

    def summary(self) -> dict[str, float]:
        """Means over levels and episodes: solved_rate, return, length, optimal_return, gap."""
        ret, opt = float(self.returns.mean()), float(self.optimal_return.mean())
        return {"solved_rate": float(self.solved.mean()), "return": ret, "length": float(self.length.mean()),
                "optimal_return": opt, "gap": opt - ret}

    @property
    def solved_rate(self) -> np.ndarray:
        """[L] fraction of each level's episodes that reached the goal."""
        return self.solved.mean(axis=1)


def _concat(results: list[LevelResults]) -> LevelResults:
    return LevelResults(*(np.concatenate([getattr(r, f) for r in results]) for f in
                          ("returns", "solved", "length", "optimal_return", "solvable")))


class EvalRunner:
    """Evaluates a policy, `episodes` parallel envs per level, each env's first episode.

    `evaluate_held_out(key, params, entries)` draws each episode's level from its held-out
    entry (`HeldOutLevel`: fixed levels give the same level every time; AMaze's procedural
    mazes a new one per episode) and returns `{name: LevelResults}` with one row per entry.
    `evaluate_sampled(key, params, generator, num_levels, env_params)` draws `num_levels` levels
    and plays each `episodes` times, in batches of at most `max_envs` envs so memory stays
    bounded; one row per level. One compiled program per (static env params, batch size),
    reused across calls. `train_params`: the training env's params, from which each held-out
    entry derives its own (`params_for`); `level_facts(levels, params) -> (optimal, solvable)`
    and `trace_state(state) -> dict` come from the environment's registry entry.
    """

    def __init__(self, env, model, train_params, episodes: int = 1, greedy: bool = False, chunk_steps: int = 16,
                 max_envs: int = 4096, level_facts=None, trace_state=None):
        if episodes < 1:
            raise ValueError(f"episodes must be >= 1, got {episodes}")
        if chunk_steps < 1:
            raise ValueError(f"chunk_steps must be >= 1, got {chunk_steps}")
        self.model, self.episodes, self.greedy = model, int(episodes), bool(greedy)
        self.chunk_steps, self.max_envs, self.train_params = int(chunk_steps), int(max_envs), train_params
        self.env, self.level_facts, self.trace_state = env, level_facts, trace_state
        self.unroll = resolve_unroll(getattr(model, "scan_unroll", 1))  # --scan-unroll, as the model's cores
        self._programs: dict = {}

    def _play(self, env_params, key, params, envs):
        """First episodes of a batch of envs, one level each."""
        n = jax.tree.leaves(envs)[0].shape[0]
        return evaluate_levels(key, self.model.apply, params, self.model.initial_carry(n), self.env, env_params,
                               envs, self.greedy, self.chunk_steps, self.unroll)

    def _level_facts(self, levels, env_params):
        """Per level: the optimal return and whether the level can be solved at all (NaN, True if unknown)."""
        if self.level_facts is not None:
            return tuple(self.level_facts(levels, env_params)[:2])  # a third (optimal steps) is the scores'
        n = jax.tree.leaves(levels)[0].shape[0]
        return jnp.full((n,), jnp.nan, jnp.float32), jnp.ones((n,), bool)

    def _run(self, env_params, key, params, levels):
        """Levels `[L]` -> per-env results `[L, E]` and per-level optimal return and solvability."""
        n_levels = jax.tree.leaves(levels)[0].shape[0]
        out = self._play(env_params, key, params, jax.tree.map(lambda x: jnp.repeat(x, self.episodes, axis=0), levels))
        per_env = {k: out[k].reshape(n_levels, self.episodes) for k in ("return", "solved", "length")}
        return (per_env, *self._level_facts(levels, env_params))

    def _program(self, name, fn, *static):
        if (name, *static) not in self._programs:
            self._programs[(name, *static)] = jax.jit(functools.partial(fn, *static))
        return self._programs[(name, *static)]

    def _held_out_group(self, entries, env_params, key, params):
        """Each env plays its own draw of its entry: results, optimal return and solvability `[entries, E]`."""
        keys = jax.random.split(key, (len(entries), self.episodes + 1))
        levels = jax.tree.map(lambda *xs: jnp.concatenate(xs), *[jax.vmap(m.sample)(k[1:])
                                                                 for m, k in zip(entries, keys)])
        out = self._play(env_params, keys[0, 0], params, levels)
        shaped = lambda x: x.reshape(len(entries), self.episodes)  # noqa: E731
        return ({k: shaped(out[k]) for k in ("return", "solved", "length")},
                *(shaped(x) for x in self._level_facts(levels, env_params)))

    def evaluate_held_out(self, key, params, entries: list) -> dict[str, LevelResults]:
        groups = defaultdict(list)
        for entry in entries:
            groups[entry.params_for(self.train_params)].append(entry)
        results = {}
        for i, (env_params, group) in enumerate(groups.items()):
            program = self._program("held_out", self._held_out_group, tuple(group), env_params)
            per_env, optimal, solvable = jax.device_get(program(jax.random.fold_in(key, i), params))
            for j, entry in enumerate(group):
                # Optimal return and solvability are per episode here (procedural mazes differ per
                # episode); an entry's row reports their mean and "all solvable".
                results[entry.name] = LevelResults(per_env["return"][j:j + 1], per_env["solved"][j:j + 1],
                                                  per_env["length"][j:j + 1], optimal[j].mean(keepdims=True),
                                                  solvable[j].all(keepdims=True))
        return {entry.name: results[entry.name] for entry in entries}

    def _batches(self, levels):
        """`(index, batch, size)` over levels `[L]` in batches of at most `max_envs` envs (`episodes`
        per level), the last one padded so one program serves every batch (`size`: its real levels)."""
        n_levels = jax.tree.leaves(levels)[0].shape[0]
        batch = max(1, self.max_envs // self.episodes)
        for i, start in enumerate(range(0, n_levels, batch)):
            chunk = jax.tree.map(lambda x: x[start:start + batch], levels)
            size = jax.tree.leaves(chunk)[0].shape[0]
            if size < batch and n_levels > batch:
                chunk = jax.tree.map(lambda x: jnp.concatenate([x, jnp.repeat(x[:1], batch - size, 0)]), chunk)
            yield i, chunk, size

    def evaluate_levels(self, key, params, levels, env_params) -> LevelResults:
        """Given levels `[L]` (one shape), each played `episodes` times: one row per level."""
        out = []
        for i, chunk, size in self._batches(levels):
            program = self._program("levels", self._run, env_params)
            per_env, optimal, solvable = jax.device_get(program(jax.random.fold_in(key, i), params, chunk))
            out.append(LevelResults(per_env["return"][:size], per_env["solved"][:size], per_env["length"][:size],
                                    optimal[:size], solvable[:size]))
        return _concat(out)

    def _pooled(self, env_params, key, params, levels):
        """Levels `[L]`, `episodes` envs each, every env playing `max_steps` steps: per level, the
        successes and completed episodes of all its envs."""
        n_levels = jax.tree.leaves(levels)[0].shape[0]
        envs = jax.tree.map(lambda x: jnp.repeat(x, self.episodes, axis=0), levels)
        wins, eps, _ = count_outcomes(key, self.model.apply, params, self.model.initial_carry, self.env, env_params,
                                      envs, env_params.max_steps, chunk_steps=env_params.max_steps, greedy=self.greedy,
                                      unroll=self.unroll)
        return wins.reshape(n_levels, -1).sum(1), eps.reshape(n_levels, -1).sum(1)

    def success_rates(self, key, params, levels, env_params) -> np.ndarray:
        """float[L]: each level's successes over its completed episodes when `episodes` envs play it
        for a whole step budget each, restarting it after every episode (the SFL paper's CVaR
        evaluation: a level solved quickly is played more often)."""
        wins, eps = [], []
        for i, chunk, size in self._batches(levels):
            program = self._program("pooled", self._pooled, env_params)
            w, e = jax.device_get(program(jax.random.fold_in(key, i), params, chunk))
            wins.append(w[:size])
            eps.append(e[:size])
        wins, eps = np.concatenate(wins), np.concatenate(eps)
        return wins / np.maximum(eps, 1)  # every env ends an episode within its budget

    def sample_solvable(self, key, generator, num_levels: int, env_params):
        """The first `num_levels` levels the environment can solve (`level_facts`; all when it
        cannot tell) among draws from `generator`, drawn `2 num_levels` at a time as the SFL
        paper's evaluation does: `(levels [num_levels], how many levels were drawn to find them)`."""
        if num_levels < 1:
            raise ValueError(f"num_levels must be >= 1, got {num_levels}")

        def draw(gen, n, params, k):
            levels = jax.vmap(gen)(jax.random.split(k, n))
            return levels, self._level_facts(levels, params)[1]

        program = self._program("solvable", draw, generator, 2 * int(num_levels), env_params)
        kept, found, drawn = [], 0, 0
        for i in range(100):
            levels, solvable = jax.device_get(program(jax.random.fold_in(key, i)))
            idx = np.flatnonzero(solvable)[:num_levels - found]
            kept.append(jax.tree.map(lambda x: x[idx], levels))
            found += len(idx)
            if found == num_levels:
                drawn += int(idx[-1]) + 1
                return jax.tree.map(lambda *x: np.concatenate(x), *kept), drawn
            drawn += len(solvable)
        raise ValueError(f"the generator gave only {found} solvable levels in {drawn} draws ({num_levels} wanted)")

    def trace(self, key, params, level, env_params) -> dict:
        """One episode on `level` recorded for rendering (see `trace_episode`; needs `trace_state`)."""
        if self.trace_state is None:
            raise ValueError("this environment records no episodes for rendering (its registry entry has no "
                             "trace_state)")

        def run(env_params, key, params, level):
            return trace_episode(key, self.model.apply, params, self.model.initial_carry(1), self.env, env_params,
                                 level, self.trace_state, self.greedy)
        return jax.device_get(self._program("trace", run, env_params)(key, params, level))

    def evaluate_sampled(self, key, params, generator, num_levels: int, env_params) -> LevelResults:
        """`num_levels` levels drawn from `generator(key) -> Level`, each played `episodes` times."""
        if num_levels < 1:
            raise ValueError(f"num_levels must be >= 1, got {num_levels}")
        k_levels, k_run = jax.random.split(key)
        draw = self._program("generate", lambda gen, n, k: jax.vmap(gen)(jax.random.split(k, n)), generator,
                             int(num_levels))
        levels = draw(k_levels)
        return self.evaluate_levels(k_run, params, levels, env_params)


class SuiteEvaluator:
    """`evaluator(key, params) -> {"<level>/solved_rate": ..., "<level>/return": ..., "mean_...": ...}`:
    the training loop's periodic evaluation on a list of held-out levels (`HeldOutLevel`s). A suite of more than
    `PER_LEVEL_LIMIT` levels (XLand's 1,000 rulesets) logs its means only: three columns per level would bury the
    log (`evaluate.py` still reports every level)."""

    PER_LEVEL_LIMIT = 100

    def __init__(self, runner: EvalRunner, levels: list):
        self.entries = list(levels)
        self.runner = runner
        self.per_level = len(self.entries) <= self.PER_LEVEL_LIMIT

    def __call__(self, key, params) -> dict[str, float]:
        per_level = {}
        for name, result in self.runner.evaluate_held_out(key, params, self.entries).items():
            summary = result.summary()
            for stat in ("solved_rate", "return", "length"):
                per_level[f"{name}/{stat}"] = summary[stat]
        means = {f"mean_{stat}": float(np.mean([per_level[f"{m.name}/{stat}"] for m in self.entries]))
                 for stat in ("solved_rate", "return")}
        return {**(per_level if self.per_level else {}), **means}

    @property
    def metric_names(self) -> list[str]:
        names = [f"{m.name}/{s}" for m in self.entries for s in ("solved_rate", "return", "length")]
        return (names if self.per_level else []) + ["mean_solved_rate", "mean_return"]
