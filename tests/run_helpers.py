"""The small training configs the tests share, so the suite compiles each program once: `TINY`, the run-level
tests' (tests/test_train.py, test_faults.py, test_scale.py: the loop's programs, kept in the process and in the
compilation cache), and `CANONICAL`, the curricula's canonical program (`canonical_run`)."""

import functools
from typing import NamedTuple

from minimax.config import TrainConfig

# Compiler options for a test program that runs for seconds: the suite compiles at LLVM -O0
# (tests/conftest.py), which makes long loops ~25x slower. `jax.jit(f, compiler_options=...)`.
FULL_OPTIMISATION = {"xla_backend_optimization_level": 3, "xla_llvm_disable_expensive_passes": False}

TINY = dict(maze_height=5, maze_width=5, n_walls=3, max_episode_steps=32, n_actions=3, recurrent_size=16,
            num_envs=8, num_steps=16, n_epochs=2, lr=3e-3, num_updates=20, log_every=5, eval_every=10,
            checkpoint_every=10, eval_episodes=2, progress=False)


def tiny(tmp_path, **overrides) -> TrainConfig:
    return TrainConfig.from_options(**{**TINY, "out_dir": str(tmp_path), **overrides})


def without_timing(rows):
    """Log rows without their wall-clock columns (the only ones two identical runs may differ in)."""
    return [{k: v for k, v in r.items() if k not in ("time_s", "sps")} for r in rows]


def trains_resumes_and_makes_train(cfg: TrainConfig):
    """Train `cfg` (2 vmapped seeds, 4 updates, a row every 2), train it again cut at 2 updates and resumed to
    4, and assert the two logs equal; then run 2 updates of `make_train` vmapped over 2 keys. Returns the rows
    and the `make_train` run's final runner state (a method's tests check its own fields of both)."""
    import jax  # noqa: PLC0415

    from minimax.training.loop import train  # noqa: PLC0415
    from minimax.training.make_train import make_train  # noqa: PLC0415
    from minimax.training.run_logs import read_rows  # noqa: PLC0415

    train(cfg)
    rows = read_rows(cfg.run_dir)
    assert [r["update"] for r in rows] == [2, 2, 2, 4, 4, 4]
    again = cfg.replace(run_name=cfg.run_name + "-resumed", num_updates=2)
    train(again)
    train(again.replace(resume=True, num_updates=4))
    assert without_timing(read_rows(again.run_dir)) == without_timing(rows)
    out = jax.jit(jax.vmap(make_train(cfg.replace(seeds="", num_updates=2))))(jax.random.split(jax.random.key(0), 2))
    return rows, out["runner_state"]


CANONICAL = dict(maze_height=5, maze_width=5, n_walls=3, max_episode_steps=16, n_actions=3, recurrent_size=16,
                 num_envs=4, num_steps=16, n_epochs=2, lr=3e-3, buffer_size=16, min_fill_ratio=0.25,
                 n_mutations=3, replay_prob=0.5, num_updates=4, log_every=2, eval_every=0, checkpoint_every=2,
                 progress=False)
"""The curricula's small config (issue 69's canonical program): episodes end within a 16-step rollout, so every
level gets a score; a 16-level buffer is ready after one cycle of 4 new levels."""
CANONICAL_CYCLES = 3


class CanonicalRun(NamedTuple):
    config: TrainConfig
    runner: object       # the runner of the config's values (its sizes and flags: the program's are the same)
    keys: object         # the two seeds' root keys
    states: object       # each seed's runner state after CANONICAL_CYCLES cycles (leaves [2, ...])
    metrics: dict        # {name: [2, CANONICAL_CYCLES]}: each cycle's `runner.step` metrics (and the chunk's
                         # `stalled`, always False at one cycle per unit), on the host


@functools.cache
def canonical_program(method: str):
    """`(config, runner, run, jit(vmap(run)))` for `method` on `CANONICAL`: `run(key, hp)` plays
    `CANONICAL_CYCLES` cycles from `runner.init(key)`: the loop's chunk of `--budget cycles` (`make_chunk`, one
    `runner.step` per unit) with the runner built from `hp` (the traced options: `config/hyperparams.py`),
    vmapped over seeds and `hp`. One per method and process: every `canonical_run` of the method, whatever its
    traced values, runs this one compiled program. (The chunk, not `make_train`, which cost about 15% more to trace
    and compile here: docs/DESIGN.md; `tests/test_make_train.py` checks that `make_train` runs what the loop
    runs.)"""
    import jax  # noqa: PLC0415

    from minimax.training.budget import make_chunk  # noqa: PLC0415
    from minimax.training.builder import run_parts, runner_from  # noqa: PLC0415

    cfg = TrainConfig.from_options(**{**CANONICAL, "method": method})
    parts = run_parts(cfg)
    runner = runner_from(parts)

    def run(key, hp):
        return make_chunk(runner_from(parts, hp), CANONICAL_CYCLES, "cycles")(runner.init(key))
    return cfg, runner, run, jax.jit(jax.vmap(run))


@functools.cache
def canonical_run(method: str, **traced) -> CanonicalRun:
    """Two seeds of `method`'s canonical program, with the traced options in `traced` (e.g. `replay_prob=1.0`)
    passed as data: a test that varies a hyperparameter reads the same compiled program."""
    import jax  # noqa: PLC0415

    from minimax.config.hyperparams import hp_arrays  # noqa: PLC0415

    cfg, runner, _, program = canonical_program(method)
    keys = jax.random.split(jax.random.key(0), 2)
    states, metrics = program(keys, hp_arrays(cfg, [traced] if traced else None, repeat=2))
    return CanonicalRun(cfg, runner, keys, states, jax.device_get(metrics))
