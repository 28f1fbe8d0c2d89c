"""`make_train(config) -> train(key)`: one seed's whole training run as one pure, jittable function.

PureJaxRL's pattern, for scripts that embed training or run many seeds in one program:

    train = make_train(TrainConfig.from_options(method="dr", num_updates=100))
    out = jax.jit(jax.vmap(train))(jax.random.split(jax.random.key(0), 8))   # 8 seeds
    out["metrics"]["episode_return_sum"]    # [8, 100]: one row per unit of the budget

`train(key)` is the program `train.py` (the loop, `loop.py`) runs, without the host around it
(logs, evaluation, checkpoints, stop signals): the seed's state from `runner.init`, then
`config.num_updates` units of `config.budget` in chunks of `config.log_every` units, each chunk
`budget.make_chunk`'s, which is what the loop compiles. So `train(jax.random.key(s))` returns
the metrics the loop logs for `--seed s` (`tests/test_make_train.py` checks them row by row),
alone or vmapped beside other seeds.

- `key`: the seed's root key, `jax.random.key(seed)` (typed) or `jax.random.PRNGKey(seed)`
  (legacy `uint32[2]`; both draw the same numbers). The run state starts from its first split,
  as in the loop (`devices.split_seed_key`).
- Returns `{"runner_state": state, "metrics": metrics}`: the runner's final state (its
  `train_state.params` are the policy) and `{name: [num_updates, ...]}`, one row per unit, the
  metrics `make_chunk` returns (`minimax.core.metrics.summarize` turns a window of rows into a
  log row); `metrics["stalled"]` flags units that could not be spent (the loop raises
  `BudgetStalled` there: `budget.py`).
- `hp`: the traced options' values (`{option: array}` by flat name, `config/hyperparams.py`; any
  left out take the config's): one compiled program for every value of them, so a sweep is a
  `vmap` over points and seeds, PureJaxRL's move:

      hps = hp_arrays(cfg, [{"lr": 1e-4}, {"lr": 3e-4}], repeat=2)   # checked per point; [4] each
      keys = jnp.stack([jax.random.key(s) for s in (0, 1, 0, 1)])     # points x seeds, point-major
      out = jax.jit(jax.vmap(train))(keys, hps)

  Only traced options may vary (`minimax.config.hyperparams.traced_options()`, and `--help` marks
  them); sizes, counts, names and booleans that choose code are the config's.
- One device per seed: `jax.vmap` it over seeds, shard it yourself if you like; `--devices`
  and data-parallel meshes are the loop's (`devices.py`).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from minimax.config import ConfigError, TrainConfig
from minimax.config.hyperparams import hp_arrays
from minimax.runners.rollout import typed_key
from minimax.training.budget import COUNTER, make_chunk, unit_size
from minimax.training.builder import run_parts, runner_from
from minimax.training.devices import split_seed_key


def make_train(config: TrainConfig):
    """`train(key, hp=None) -> {"runner_state", "metrics"}` for one seed of `config` (see the module
    docstring); `train.runner` and `train.config` are the runner it drives and its config,
    `train.hyperparams` the traced options' values it uses when `hp` is None."""
    parts = run_parts(config)
    runner = runner_from(parts)
    budget, total, every = config.budget, config.num_updates, max(1, min(config.log_every, config.num_updates))
    chunks, rest = divmod(total, every)
    counter, size = COUNTER[budget], unit_size(budget, runner)
    defaults = hp_arrays(config)

    def run_chunk(stepper, state, ahead, length: int):
        """`length` units from `ahead` (counter units past the chunk's start, `make_chunk`) with the runner
        `stepper` (built from `hp`), and the next chunk's `ahead`, as the loop computes it from its counters."""
        state, metrics = make_chunk(stepper, length, budget)(state, ahead)
        return state, ahead + jnp.sum(metrics[counter]).astype(jnp.int32) - length * size, metrics

    def train(key, hp=None):
        unknown = sorted(set(hp or {}) - set(defaults))
        if unknown:
            raise ConfigError(f"make_train: hp names {', '.join(unknown)}, not a traced option of this run "
                              f"(traced: {', '.join(defaults)})")
        stepper = runner_from(parts, {**defaults, **(hp or {})})
        init_key, _ = split_seed_key(typed_key(key))
        state, ahead = runner.init(init_key), jnp.zeros((), jnp.int32)

        def body(carry, _):
            state, ahead, metrics = run_chunk(stepper, *carry, every)
            return (state, ahead), metrics

        (state, ahead), metrics = jax.lax.scan(body, (state, ahead), None, length=chunks)
        metrics = jax.tree.map(lambda x: x.reshape((chunks * every,) + x.shape[2:]), metrics)
        if rest:
            state, _, last = run_chunk(stepper, state, ahead, rest)
            metrics = jax.tree.map(lambda a, b: jnp.concatenate([a, b]), metrics, last)
        return {"runner_state": state, "metrics": metrics}

    train.runner, train.config, train.hyperparams = runner, config, defaults
    return train
