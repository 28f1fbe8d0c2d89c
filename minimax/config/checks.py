"""The training configuration's checks across its groups, and the method names they are about.

A group (`config_groups.py`, `PPOConfig`, `BufferConfig`, ...) checks its own values; what only the
whole `TrainConfig` can see (the method against the environment, the buffer against the batch, seeds
against devices) is checked here, each problem one message naming its flags. `TrainConfig` raises
them all at once (`options.raise_problems`); this module does not import it (the config is built on
top of these checks, not the other way round).
"""

from __future__ import annotations

import typing
from pathlib import Path
from typing import Literal

from minimax.core.units import BUDGETS
from minimax.envs.registry import env_names, get_env
from minimax.core.options import flag

Method = Literal["dr", "plr", "robust_plr", "parallel_plr", "accel", "parallel_accel", "paired", "pop_paired",
                 "minimax_adversary", "sfl"]
METHODS: tuple[str, ...] = typing.get_args(Method)
PLR_METHODS = ("plr", "robust_plr", "parallel_plr", "accel", "parallel_accel")
MUTATION_METHODS = ("accel", "parallel_accel")
TEACHER_METHODS = ("paired", "pop_paired", "minimax_adversary")


def problems(c):
    """Every invalid value the groups cannot see alone, as a message naming its flag."""
    if c.seeds.strip():
        try:
            seeds = [int(v) for v in c.seeds.split(",") if v.strip()]
        except ValueError:
            yield f"--seeds must be comma-separated integers, got {c.seeds!r}"
        else:
            if len(set(seeds)) != len(seeds):
                yield f"--seeds lists a seed twice: {c.seeds!r}"
            if c.num_seeds != 1:
                yield f"give --seeds or --num-seeds, not both (got --seeds {c.seeds!r} --num-seeds {c.num_seeds})"
    for name, low in (("num_seeds", 1), ("devices", 0), ("buffer_png", 0), ("num_processes", 0)):
        v = getattr(c, name)
        if not (isinstance(v, int) and not isinstance(v, bool) and v >= low):
            yield f"{flag(name)} must be an int >= {low}, got {v!r}"
    if c.method not in METHODS:
        yield f"--method must be one of {', '.join(METHODS)}, got {c.method!r}"
    if c.budget not in BUDGETS:
        yield f"--budget must be one of {', '.join(BUDGETS)}, got {c.budget!r}"
    elif c.buffer_png and c.method not in PLR_METHODS:
        yield f"--buffer-png draws the PLR family's level buffer; --method {c.method} has none"
    for name in ("num_updates", "log_every", "keep_checkpoints", "num_envs", "num_steps"):
        v = getattr(c, name)
        if not (isinstance(v, int) and not isinstance(v, bool) and v > 0):
            yield f"{flag(name)} must be > 0, got {v!r}"
    if not c.checkpoint_every >= 0:
        yield f"--checkpoint-every must be >= 0, got {c.checkpoint_every!r}"
    if not c.ppo.lr > 0:  # PPOConfig allows 0 (a frozen policy); a training run does not
        yield f"--lr must be > 0, got {c.ppo.lr!r}"
    if c.num_envs > 0 and c.ppo.n_minibatches > 0 and c.num_envs % c.ppo.n_minibatches:
        yield f"--n-minibatches ({c.ppo.n_minibatches}) must divide --num-envs ({c.num_envs})"
    if c.log_every > 0:
        for name, value in (("eval_every", c.eval.eval_every), ("checkpoint_every", c.checkpoint_every)):
            if value > 0 and value % c.log_every:
                yield f"{flag(name)} ({value}) must be a multiple of --log-every ({c.log_every})"
    if c.run_name and (Path(c.run_name).name != c.run_name or c.run_name in (".", "..")):
        yield f"--run-name must be a plain directory name, got {c.run_name!r}"
    if c.env.env_name in env_names():
        yield from _env_problems(c)
    if c.method in PLR_METHODS:
        yield from _curriculum_problems(c)
    if c.method in TEACHER_METHODS:
        yield from c.teacher.problems(c.method, c.env, c.model, c.num_envs)
    if c.method == "sfl":
        yield from c.sfl.problems(c.num_envs, episode_limit(c))


def episode_limit(c) -> int | None:
    """The training levels' episode step limit, when the environment can be loaded."""
    try:
        return get_env(c.env.env_name).make_params(c.env).max_steps
    except ValueError:
        return None


def _env_problems(c):
    """The method and evaluation against what the environment offers (`envs/registry.py`)."""
    env = c.env.env_name
    try:
        spec = get_env(env)
    except ValueError as err:  # an optional package is missing
        yield str(err)
        return
    if c.eval.eval_every and c.eval.eval_suite.strip():
        try:
            spec.held_out(c.eval.eval_suite)
        except ValueError as err:
            yield f"--eval-suite: {err}"
    if c.method in MUTATION_METHODS:
        try:
            spec.make_mutator(c.env.mutator or next(iter(spec.mutators), ""), 1)
        except ValueError as err:
            yield f"{c.method}: {err}"
    if c.model.recurrent_cell not in spec.cores:
        yield f"--recurrent-cell {c.model.recurrent_cell}: the student of --env {env} takes {', '.join(spec.cores)}"
    if c.buffer_png and spec.render_levels is None:
        yield f"--buffer-png: --env {env} does not render levels"
    if c.method in TEACHER_METHODS and spec.teacher is None:
        yield f"--method {c.method} needs a teacher's design environment, and --env {env} has none"
    if c.curriculum.score_function in ("least_confidence", "min_margin") and not spec.discrete_actions:
        yield (f"--score-function {c.curriculum.score_function} needs discrete actions; --env {env} has "
               f"continuous ones")
    if c.method == "sfl" and not spec.binary_outcome:
        yield (f"--method sfl scores levels by how often their episodes succeed; --env {env} has no success "
               f"outcome (SFL needs episodes that succeed or fail: maze, cartpole)")
    if c.curriculum.score_function == "learnability" and not spec.binary_outcome:
        yield f"--score-function learnability needs episodes that succeed or fail; --env {env} has no such outcome"


def _curriculum_problems(c):
    """The PLR family's options against each other and the batch (only for those methods)."""
    cur, size = c.curriculum, c.buffer.capacity
    if size < 2:
        yield f"--buffer-size must be >= 2 for {c.method}, got {size}"
    if c.method in MUTATION_METHODS and cur.n_mutations < 1:
        yield f"--n-mutations must be >= 1 for {c.method}, got {cur.n_mutations}"
    ready_at = cur.ready_at(size)
    if c.method in ("robust_plr", "accel") and cur.replay_prob <= 0 and not cur.train_levels:
        yield f"--replay-prob must be > 0 for {c.method} (it trains only on replays), got {cur.replay_prob}"
    if cur.train_levels and c.method in MUTATION_METHODS:
        yield (f"--train-levels ({cur.train_levels}) cannot be used with {c.method}: its mutated levels would take "
               f"the buffer slots of seen training levels, which are then lost for good (use robust_plr, plr or "
               f"parallel_plr)")
    if cur.train_levels and size < cur.train_levels:
        yield (f"--train-levels ({cur.train_levels}) needs --buffer-size >= {cur.train_levels} (got {size}): "
               f"the buffer must hold every training level, so none is evicted and lost for good")
    elif cur.train_levels and ready_at > cur.train_levels:
        yield (f"--train-levels ({cur.train_levels}) cannot fill --min-fill-ratio x --buffer-size "
               f"({cur.min_fill_ratio} x {size}) levels: replay would never start")
    if not cur.replay_with_replacement and max(ready_at, 1) < c.num_envs:
        yield (f"--no-replay-with-replacement needs --min-fill-ratio x --buffer-size >= --num-envs "
               f"({cur.min_fill_ratio} x {size} < {c.num_envs}): not enough distinct levels to sample")
    if (c.method in MUTATION_METHODS and cur.mutation_criterion != "batch"
            and not 1 <= cur.mutation_subsample <= c.num_envs):
        yield (f"--mutation-subsample must be in [1, --num-envs ({c.num_envs})] for --mutation-criterion "
               f"{cur.mutation_criterion}, got {cur.mutation_subsample}")
