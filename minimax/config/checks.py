"""The training configuration's checks across its groups, and the method names they are about.

A group (`config/groups.py`, `PPOConfig`, `BufferConfig`, ...) checks its own values; what only the
whole `TrainConfig` can see (the method against the environment, the buffer against the batch, seeds
against devices) is checked here, each problem one message naming its flags. `TrainConfig` raises
them all at once (`options.raise_problems`); this module does not import it (the config is built on
top of these checks, not the other way round).
"""

from __future__ import annotations

import dataclasses

from minimax.config.groups import TRANSFORMER_OPTIONS, ModelConfig
from minimax.config.run import run_problems
from minimax.core.options import flag
from minimax.curricula.scores import SCORES
from minimax.envs.registry import env_names, get_env
from minimax.core.methods import get_method, method_names

METHODS: tuple[str, ...] = method_names()
"""The built-in methods (what the package registers on import); code asks the registry instead,
which also knows methods registered later (`minimax.runners.register_method`)."""
PLR_METHODS = tuple(m for m in METHODS if get_method(m).level_buffer)
MUTATION_METHODS = tuple(m for m in METHODS if get_method(m).mutates)
TEACHER_METHODS = tuple(m for m in METHODS if get_method(m).designs_levels)


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
    for name, low in (("num_seeds", 1), ("devices", 0), ("num_processes", 0)):
        v = getattr(c, name)
        if not (isinstance(v, int) and not isinstance(v, bool) and v >= low):
            yield f"{flag(name)} must be an int >= {low}, got {v!r}"
    method = _method(c.method)
    if method is None:
        yield f"--method must be one of {', '.join(method_names())}, got {c.method!r}"
    yield from run_problems(c)
    if c.curriculum.buffer_png and method is not None and not method.level_buffer:
        yield f"--buffer-png draws the PLR family's level buffer; --method {c.method} has none"
    if not (isinstance(c.keep_checkpoints, int) and not isinstance(c.keep_checkpoints, bool)
            and c.keep_checkpoints > 0):
        yield f"--keep-checkpoints must be > 0, got {c.keep_checkpoints!r}"
    if not c.ppo.lr > 0:  # PPOConfig allows 0 (a frozen policy); a training run does not
        yield f"--lr must be > 0, got {c.ppo.lr!r}"
    if c.num_envs > 0 and c.ppo.n_minibatches > 0 and c.num_envs % c.ppo.n_minibatches:
        yield f"--n-minibatches ({c.ppo.n_minibatches}) must divide --num-envs ({c.num_envs})"
    if c.log_every > 0:
        for name, value in (("eval_every", c.eval.eval_every), ("checkpoint_every", c.checkpoint_every)):
            if value > 0 and value % c.log_every:
                yield f"{flag(name)} ({value}) must be a multiple of --log-every ({c.log_every})"
    spec = None
    if c.env.env_name in env_names():
        try:
            spec = get_env(c.env.env_name)
        except ValueError as err:  # an optional package is missing
            yield str(err)
            return
        yield from _env_problems(c, spec, method)
    score = SCORES.get(c.curriculum.score_function)
    if score is not None and score.problems is not None:
        yield from score.problems(c)
    if method is not None:
        yield from method.check(c, spec)


def _method(name):
    try:
        return get_method(name)
    except (ValueError, TypeError):
        return None


def episode_limit(c) -> int | None:
    """The training levels' episode step limit, when the environment can be loaded."""
    try:
        return get_env(c.env.env_name).make_params(c.env).max_steps
    except ValueError:
        return None


def _env_problems(c, spec, method):
    """The method and evaluation against what the environment offers (`envs/registry.py`)."""
    env = c.env.env_name
    if c.eval.eval_every and c.eval.eval_suite.strip():
        try:
            if spec.check_suite is not None:  # without loading the suite's levels
                spec.check_suite(c.eval.eval_suite, spec.make_params(c.env))
            elif levels := spec.held_out(c.eval.eval_suite):  # a suite the training params cannot play
                levels[0].params_for(spec.make_params(c.env))
        except ValueError as err:
            yield f"--eval-suite: {err}"
    if method is not None and method.mutates:
        try:
            spec.make_mutator(c.mutation.mutator or next(iter(spec.mutators), ""), 1)
        except ValueError as err:
            yield f"{c.method}: {err}"
    yield from _student_problems(c, spec)
    if c.model.recurrent_cell not in spec.cores:
        yield f"--recurrent-cell {c.model.recurrent_cell}: the student of --env {env} takes {', '.join(spec.cores)}"
    if c.curriculum.buffer_png and spec.render_levels is None:
        yield f"--buffer-png: --env {env} does not render levels"
    if method is not None and method.designs_levels and spec.teacher is None:
        yield f"--method {c.method} needs a teacher's design environment, and --env {env} has none"
    score = SCORES.get(c.curriculum.score_function)
    if score is not None and score.needs_discrete_actions and not spec.discrete_actions:
        yield (f"--score-function {c.curriculum.score_function} needs discrete actions; --env {env} has "
               f"continuous ones")
    if method is not None and method.needs_success and not spec.binary_outcome:
        yield (f"--method {c.method} scores levels by how often their episodes succeed; --env {env} has no success "
               f"outcome ({c.method} needs episodes that succeed or fail: maze, cartpole)")
    if score is not None and score.needs_optimum and spec.level_facts is None:
        yield (f"--score-function {c.curriculum.score_function} needs each level's optimal return, which --env {env} "
               f"does not know (maze does: its shortest paths)")
    if score is not None and score.needs_success and not spec.binary_outcome:
        yield (f"--score-function {c.curriculum.score_function} needs episodes that succeed or fail; --env {env} has "
               f"no such outcome")


def own_student(env: str, student: str) -> str:
    """`--student` on an environment with one student network, its own: `auto`, or a `ValueError` naming why."""
    if student == "transformer":
        raise ValueError(f"the entity transformer reads entity observations, and --env {env} has none "
                         f"(--env kinetix --kinetix-obs entity has)")
    if student != "auto":
        raise ValueError(f"--env {env} has one student network, its own: leave --student auto")
    return "auto"


def _student_problems(c, spec):
    """`--student` against what the environment's observation feeds (`UEDEnv.student_for`), and the entity
    transformer's shape options on a run whose student is another network."""
    env, student = c.env.env_name, c.model.student
    try:
        chosen = spec.student_for(c.env, student) if spec.student_for else own_student(env, student)
    except ValueError as err:
        yield f"--student {student}: {err}"
        return
    defaults = {f.name: f.default for f in dataclasses.fields(ModelConfig)}
    changed = [n for n in TRANSFORMER_OPTIONS if getattr(c.model, n) != defaults[n]]
    if changed and chosen != "transformer":
        yield (f"{flag(ModelConfig, changed[0])} shapes the entity transformer, and the student of --env {env} here "
               f"is {'its own network' if chosen == 'auto' else 'the ' + chosen.upper()} (the transformer reads "
               f"entity observations: --env kinetix --kinetix-obs entity)")
