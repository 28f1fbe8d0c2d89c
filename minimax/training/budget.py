"""The training budget: what `--num-updates` counts, and the compiled loop that spends it.

`--num-updates N` means **N PPO updates of the student** (`--budget updates`, the default), as
the minimax release counts them (`ExperimentRunner.run` loops `while n_updates < n_total_updates`;
`n_updates` rises only in `PPO.update`) and as the report's "30k PPO updates" does. A runner's
`step` is one rollout cycle, with or without a gradient update: robust PLR's cycles of new levels
and the parallel methods' cycles before their buffer is ready make none. So one unit of the
budget is as many cycles as it takes to make one gradient update: a `lax.while_loop` over
`runner.step` inside the compiled chunk. Methods whose every cycle trains (DR, plain PLR, PAIRED
and relatives, SFL) run one cycle per unit, the same program as before the loop existed.

Two other units keep other comparisons possible:
- `cycles`: one unit is one rollout cycle (what the loop counted before issue 36; runs saved
  then resume under it);
- `env_steps`: one unit is `num_envs x num_steps` env steps (one DR update's worth): methods
  compared at equal `--num-updates` have played the same number of env steps (up to the last
  cycle of a unit, which may overshoot it; the overshoot counts towards the next unit).

Seeds in one program each spend exactly their budget: a unit's loop runs while *any* seed still
needs cycles, and a seed that is done is left unchanged (`vmap` of `while_loop` keeps the carry of
a lane whose condition is false). The release's `.any()` lets seeds overshoot instead; stopping
each seed at N makes a seed's run the same alone or beside others.

A unit that cannot be spent must not loop forever: a robust method whose episodes outlast its
rollouts never scores a level, never fills its buffer and never trains. The loop counts cycles
without progress (no gradient update and no growth of the buffer) and stops after
`runner.max_idle_cycles` of them, flagging the chunk `stalled`; the host turns that into an
error naming the options to change (`train.py`).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from minimax.core.metrics import is_counted
from minimax.envs.wrappers import tree_select
from minimax.core.units import BUDGETS, COUNTER, LABEL, Budget, max_idle_cycles  # noqa: F401  (re-exported)

STALLED = "stalled"
"""The chunk metric that flags a unit left unspent (popped by the host before logging)."""


def unit_size(budget: str, runner) -> int:
    """The counter's amount in one unit (env steps: one DR update's batch)."""
    return runner.num_envs * runner.num_steps if budget == "env_steps" else 1


def one_cycle_per_unit(budget: str, runner) -> bool:
    """Whether every unit is exactly one `runner.step` (no loop needed)."""
    return budget == "cycles" or (budget == "updates" and getattr(runner, "trains_every_cycle", False))


def make_chunk(runner, length: int, budget: str = "updates"):
    """`(state, ahead) -> (state, metrics[length])`: `length` units of the budget in one program.

    `ahead` (int32, per seed) is how far the seed's counter already is past the chunk's start in
    counter units (0 except for `env_steps`, whose last cycle may overshoot a unit). Metrics are
    one row per unit, aggregated over its cycles as `metrics.summarize` reads them: counters and
    `_sum`/`_count` halves summed, `buffer/*` the last cycle's, other statistics their mean over
    the unit's cycles (a unit that ran no cycle reports zeros and `cycles` 0)."""
    if one_cycle_per_unit(budget, runner):
        def chunk(state, ahead=0):
            state, metrics = jax.lax.scan(lambda s, _: runner.step(s), state, None, length=length)
            return state, {**metrics, STALLED: jnp.zeros((length,), bool)}
        return chunk

    counter, size = COUNTER[budget], unit_size(budget, runner)
    limit = getattr(runner, "max_idle_cycles", max_idle_cycles(1.0))  # a runner whose every cycle trains never idles
    if budget == "updates" and knows_next_cycle(runner):
        return _chunk_of_units(runner, length, lambda carry, i, zeros: _update_unit(runner, limit, carry, i, zeros))

    def unit(carry, i, zeros):
        target = (i + 1) * size

        def cond(c):
            _, ahead, _, _, stalled, _ = c
            return (ahead < target) & ~stalled

        def body(c):
            state, ahead, idle, size_before, _, total = c
            state, m = runner.step(state)
            idle, size_now = _progress(m, idle, size_before)
            return state, ahead + m[counter], idle, size_now, idle >= limit, _add(total, m)

        state, ahead, stalled = carry
        init = (state, ahead, jnp.zeros((), jnp.int32), _no_size(zeros), stalled, zeros)
        state, ahead, _, _, stalled, total = jax.lax.while_loop(cond, body, init)
        return (state, ahead, stalled), {**_means(total), STALLED: stalled}

    return _chunk_of_units(runner, length, unit)


def _chunk_of_units(runner, length: int, unit):
    """`(state, ahead) -> (state, metrics[length])`: a scan of `unit(carry, i, zeros)` over the chunk's units,
    the carry `(state, ahead, stalled)`."""
    def chunk(state, ahead=0):
        # The metrics' shapes, traced where the chunk runs (inside shard_map, a step's collectives need its axis):
        # where the runner can play a cycle of a known side, from its cycle without a gradient, the cheaper trace
        # (both sides report the same metrics: `branches.cond_or_zeros`).
        one = (lambda s: runner.cycle(s, False)) if knows_next_cycle(runner) else runner.step
        zeros = {k: jnp.zeros(v.shape, v.dtype) for k, v in jax.eval_shape(one, state)[1].items()}
        (state, _, _), metrics = jax.lax.scan(lambda c, i: unit(c, i, zeros),
                                              (state, jnp.asarray(ahead, jnp.int32), jnp.bool_(False)),
                                              jnp.arange(length, dtype=jnp.int32))
        return state, metrics

    return chunk


def knows_next_cycle(runner) -> bool:
    """Whether the runner can say before a cycle whether it will train (`will_train(state)`) and play a
    cycle of a known side (`cycle(state, trains: bool)`): then the update unit is `_update_unit`."""
    return callable(getattr(runner, "will_train", None)) and callable(getattr(runner, "cycle", None))


def _update_unit(runner, limit: int, carry, i, zeros):
    """One PPO update of a runner that trains on some cycles only (robust PLR, ACCEL): the cycles that
    will not train, in a `while_loop` whose body has no PPO update (nor ACCEL's mutation rollout), then
    the cycle that trains, built without its branch.

    The step's loop (`make_chunk`'s `unit`) plays the same cycles with the same keys, but its body holds
    both sides of the replay decision; under `vmap` over seeds that decision is per seed, the `cond`
    becomes a `select`, and every cycle pays a PPO update it may throw away. Here a lane's loop runs
    only cycles of new levels, and the lanes wait for the last seed to replay at the price of rollouts,
    not updates. A seed already past its unit (`ahead`) or stalled keeps its state."""
    state, ahead, stalled = carry
    due = (ahead < i + 1) & ~stalled

    def cond(c):
        state, _, _, stalled, _ = c
        return due & ~stalled & ~runner.will_train(state)

    def body(c):
        state, idle, size_before, _, total = c
        state, m = runner.cycle(state, False)
        idle, size_now = _progress(m, idle, size_before)
        return state, idle, size_now, idle >= limit, _add(total, m)

    init = (state, jnp.zeros((), jnp.int32), _no_size(zeros), stalled, zeros)
    state, _, _, stalled, total = jax.lax.while_loop(cond, body, init)
    trained, m = runner.cycle(state, True)
    keep = due & ~stalled
    state = tree_select(keep, trained, state)
    total = tree_select(keep, _add(total, m), total)
    ahead = ahead + jnp.where(keep, m["gradient_updates"], 0)
    return (state, ahead, stalled), {**_means(total), STALLED: stalled}


def _progress(m: dict, idle, size_before):
    """`(idle, size_now)` after a cycle with metrics `m`: the count of cycles in a row without a gradient
    update or growth of the buffer (reset by either), and the buffer's size to compare the next cycle with."""
    grew = m["buffer/size"] > size_before if "buffer/size" in m else jnp.bool_(False)
    idle = jnp.where((m["gradient_updates"] > 0) | grew, 0, idle + 1)
    return idle, m["buffer/size"] if "buffer/size" in m else size_before


def _no_size(zeros: dict):
    """The buffer size a unit starts comparing with: -1, so a first cycle that stores a level is progress."""
    return jnp.full((), -1, zeros["buffer/size"].dtype if "buffer/size" in zeros else jnp.int32)


def _add(total: dict, m: dict) -> dict:
    """One more cycle's metrics into the unit's: counted entries add up, `buffer/*` is replaced,
    the rest add up (divided by the unit's cycles in `_means`)."""
    return {k: v if k.startswith("buffer/") else total[k] + v for k, v in m.items()}


def _means(total: dict) -> dict:
    cycles = total["cycles"]
    return {k: v if is_counted(k) or k.startswith("buffer/")
            else jnp.where(cycles > 0, v / jnp.maximum(cycles, 1).astype(v.dtype), jnp.zeros_like(v))
            for k, v in total.items()}


def stalled_message(method: str, seed: int, unit: int, idle: int, buffer_size, ready: int, min_fill_ratio: float,
                    capacity: int, num_steps: int, episode_limit: int) -> str:
    """Why a run stopped making progress (`make_chunk`'s `stalled`), naming the options to change;
    `ready`: the levels the buffer needs before replay starts (`CurriculumConfig.ready_at`)."""
    held = "?" if buffer_size is None else int(buffer_size)
    text = (f"seed {seed} cannot reach update {unit}: {idle} rollout cycles in a row made no gradient update and "
            f"added no level to the buffer. {method} trains only on replays, which start once its buffer holds "
            f"{ready} levels (--min-fill-ratio {min_fill_ratio} x --buffer-size {capacity}); it holds {held}. ")
    if episode_limit > num_steps:
        text += (f"A level enters the buffer only when one of its episodes ends within a rollout, and episodes last up "
                 f"to {episode_limit} steps against rollouts of {num_steps}: raise --num-steps or lower "
                 f"--max-episode-steps. ")
    else:
        text += ("The generator may make too few distinct levels (or episodes that never end) to fill it: lower "
                 "--buffer-size or --min-fill-ratio, or pass --no-unique-levels. ")
    return text + "(--budget cycles counts rollout cycles instead of updates and never waits for one.)"
