"""A PLR-family runner as a registered method: its options, its checks, how it is built.

`plr_method(MyRunner, summary=...)` reads what the class already says (`method`, `mutates`,
`trains_only_on_replays`, `trains_every_cycle`) and returns the `Method` to register, so a new
PLR variant is one subclass of `PLRFamilyRunner` (or of one of ours) plus one
`register_method(plr_method(...))` line in its own module (`examples/custom_curriculum.py`).
"""

from __future__ import annotations

from minimax.core.methods import Method
from minimax.curricula.level_buffer import BufferConfig
from minimax.runners.plr_family import CurriculumConfig, MutationConfig, ReplayConfig

PLR_OPTIONS = {"buffer": BufferConfig, "curriculum": CurriculumConfig}
"""The option groups of every PLR-family method: the level buffer and how the method uses it."""
MUTATION_OPTIONS = {"mutation": MutationConfig}
"""What a method that edits levels (ACCEL) declares beyond `PLR_OPTIONS`."""
REPLAY_OPTIONS = {"replay": ReplayConfig}
"""What a method that decides each cycle between replay and new levels by a coin of `--replay-prob`
declares (the parallel methods replay every cycle once the buffer is ready and have no coin)."""


def plr_builder(runner_class: type, own: tuple[str, ...] = ()):
    """`parts -> runner` for a `PLRFamilyRunner` subclass (its constructor's signature): the groups its
    method does not declare (a parallel method's coin, a method's mutation) keep their defaults; `own`
    names the method's own groups, passed to the constructor as keyword arguments of those names."""

    def build(parts):
        cfg, spec = parts.cfg, parts.spec
        mutator = parts.mutator() if runner_class.mutates else None
        return runner_class(*parts.args, buffer=cfg.buffer, curriculum=cfg.curriculum, mutator=mutator,
                            level_metrics=spec.level_metrics, level_identity=spec.level_identity,
                            shard=parts.shard, level_facts=spec.level_facts, replay=cfg.replay,
                            mutation=cfg.mutation, **{g: getattr(cfg, g) for g in own})

    return build


def plr_method(runner_class: type, summary: str = "", name: str = "", coin_replay: bool = True,
               options: dict | None = None, host: str | None = None, problems=None) -> Method:
    """The `Method` of a `PLRFamilyRunner` subclass (named `runner_class.method` unless `name`);
    `coin_replay`: it reads `--replay-prob` (plain and robust PLR, ACCEL; not the parallel ones);
    `options`: option groups of its own, beside the family's (`{"eager": EagerOptions}`: the runner's
    constructor then takes `eager=` the run's values; `tests/plugins/eager_plr.py`); `host`: the host
    loop's protocol it runs as on Procgen and gymnasium (`core/methods.py: HOST_PROTOCOLS`), if any;
    `problems(cfg, spec) -> messages`: the method's own checks, beside the family's."""
    mutates = bool(runner_class.mutates)
    groups = {**PLR_OPTIONS, **(MUTATION_OPTIONS if mutates else {}), **(REPLAY_OPTIONS if coin_replay else {}),
              **(options or {})}
    build = plr_builder(runner_class, own=tuple(options or ()))
    return Method(name or runner_class.method, build=build, summary=summary, options=groups,
                  level_buffer=True, mutates=mutates, trains_every_cycle=bool(runner_class.trains_every_cycle),
                  trains_only_on_replays=bool(runner_class.trains_only_on_replays),
                  problems=lambda cfg, spec: [*curriculum_problems(cfg, mutates),
                                              *replay_problems(cfg, runner_class, coin_replay),
                                              *cycle_problems(cfg, runner_class),
                                              *(problems(cfg, spec) if problems is not None else ())],
                  device_splits=lambda cfg: device_splits(cfg, mutates), runner=runner_class, host=host)


def replay_problems(c, runner_class: type, coin_replay: bool):
    """A method that trains only on replays and draws them with the replay coin needs `--replay-prob` > 0
    (unless a finite training set, whose schedule replays once every seed is seen)."""
    if (runner_class.trains_only_on_replays and coin_replay and c.replay.replay_prob <= 0
            and not c.curriculum.train_levels):
        yield f"--replay-prob must be > 0 for {c.method} (it trains only on replays), got {c.replay.replay_prob}"


def cycle_problems(c, runner_class: type):
    """`--cycle-updates` K > 1 (`plr_trials.py`) needs a method whose cycle keeps its levels, and neither a finite
    training set (its seeds are marked seen per cycle) nor PACE (a score of one update's gradient)."""
    k = c.curriculum.cycle_updates
    if k == 1:
        return
    if not runner_class.keeps_cycle_levels:
        yield (f"--cycle-updates {k} is not supported by {c.method}: it writes its own cycle (use plr or robust_plr, "
               f"or --cycle-updates 1)")
    if c.curriculum.train_levels:
        yield f"--cycle-updates {k} cannot be used with --train-levels ({c.curriculum.train_levels}): use one or the other"
    if c.curriculum.score_function == "pace":
        yield (f"--cycle-updates {k} cannot be used with --score-function pace: PACE scores one update's gradient, "
               f"not a cycle of several")


def device_splits(c, mutates: bool) -> tuple[tuple[str, int], ...]:
    """Per-device buffers split the buffer; an easy/hard mutation criterion splits its q parents."""
    out = () if c.curriculum.global_buffer else (("--buffer-size", c.buffer.capacity),)
    if mutates and c.mutation.mutation_criterion != "batch":
        out += (("--mutation-subsample", c.mutation.mutation_subsample),)
    return out


def curriculum_problems(c, mutates: bool):
    """The PLR family's options against each other and the batch, as messages naming the flags."""
    cur, mut, size, method = c.curriculum, c.mutation, c.buffer.capacity, c.method
    if size < 2:
        yield f"--buffer-size must be >= 2 for {method}, got {size}"
    if mutates and mut.n_mutations < 1:
        yield f"--n-mutations must be >= 1 for {method}, got {mut.n_mutations}"
    ready_at = cur.ready_at(size)
    if cur.train_levels and mutates:
        yield (f"--train-levels ({cur.train_levels}) cannot be used with {method}: its mutated levels would take "
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
    if mutates and mut.mutation_criterion != "batch" and not 1 <= mut.mutation_subsample <= c.num_envs:
        yield (f"--mutation-subsample must be in [1, --num-envs ({c.num_envs})] for --mutation-criterion "
               f"{mut.mutation_criterion}, got {mut.mutation_subsample}")
