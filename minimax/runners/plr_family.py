"""The PLR family's options, run state and thin runner base.

One module per method writes its whole `step` (`plr.py`, `robust_plr.py`, `accel.py`,
`parallel_plr.py`, `parallel_accel.py`) in the shared pieces of `plr_parts.py`: functions over the
runner as an explicit context (new levels, the replay coin, play, train, score and offer, mutate,
finish). The runner base here holds only what every method's runner is: its static context (env,
model, PPO, buffer and curriculum options, device shard), `init` and the facts the training loop
asks (`local_fields`, `max_idle_cycles`). Every check of these options runs once, at config time,
from the method's declaration (`plr_method.py: curriculum_problems`, `device_splits`).

**One step is one rollout cycle**, the minimax release's `tick`: robust PLR's new-level cycles
(scored, no gradient) and its replay cycles (which train), ACCEL's replay cycles with their
mutation rollout, and the parallel methods' cycles (no gradient until the buffer is ready).
`--num-updates` counts PPO updates, as the release does: the training loop runs as many
cycles as an update takes (`minimax/training/budget.py`); the logs count `gradient_updates`, `cycles`
and `env_steps` separately.

Data parallel (`shard`, inside `jax.shard_map` over D devices): each device plays
`num_envs / D` envs of every group. By default each device keeps its own buffer of
capacity K / D, filled and scored only with its own levels (the minimax report's
synchronous data-parallel variant); with `global_buffer` one buffer of capacity K is
replicated on every device and updated with every device's levels (gathered). Either way
the replay decision is the same on every device (one key; "ready" means every device's
buffer is ready), so all devices take the same branch and train on the same update.
"""

from __future__ import annotations

import dataclasses
import math
import typing
from typing import Callable, Literal

import jax
import jax.numpy as jnp
from flax import struct
from flax.training.train_state import TrainState

from minimax.agents.ppo import PPOConfig, create_train_state
from minimax.core.options import Traced, check
from minimax.core.parallel import NO_SHARD, Shard
from minimax.core.units import max_idle_cycles
from minimax.curricula.level_buffer import BufferConfig, LevelBuffer, init_buffer
from minimax.curricula.scores import SCORES
from minimax.curricula.training_set import REPLAY_SCHEDULES, TrainingSet, init_training_set

MutationCriterion = Literal["batch", "easy", "hard"]
MUTATION_CRITERIA: tuple[str, ...] = typing.get_args(MutationCriterion)


@dataclasses.dataclass(frozen=True)
class CurriculumConfig:
    """How a PLR-family method uses its level buffer (static; every PLR-family method's `curriculum`
    group). Each field is also the training command's option of that name; its docstring is the
    `--help` text."""

    min_fill_ratio: float = 0.5
    """Replay only once this fraction of the buffer is filled."""
    score_function: str = "maxmc"
    """Level score (PLR family): pvl, maxmc, l1_value_loss, gae, policy_entropy, one_step_td, least_confidence,
    min_margin, normalized_policy_entropy, one_step_td_level_replay (the level-replay reference's), learnability,
    oracle_regret (maze: optimal return - return), mna, pace, or one registered with minimax.register_score."""
    replay_with_replacement: bool = True
    """Sample the replay batch with replacement (else distinct levels, Gumbel top-k)."""
    train_levels: int = 0
    """> 0: train on this many fixed level seeds (the PLR paper's finite training set); 0 = unlimited."""
    replay_schedule: Literal[REPLAY_SCHEDULES] = "fixed"
    """With --train-levels: replay with --replay-prob (fixed) or with the fraction of seeds seen."""
    global_buffer: bool = False
    """On several devices: one level buffer shared by all devices, instead of one of capacity K/D each."""
    buffer_png: int = 0
    """Save a PNG of the N highest-weighted buffer levels at every log step in <run>/buffer/ (0 = off)."""
    pace_loss: Literal["policy", "ppo"] = "policy"
    """--score-function pace: the update of the policy objective (surrogate - entropy bonus; the paper's "policy
    optimization objective") or of the whole PPO loss (the value term too)."""
    pace_params: Literal["actor", "all"] = "actor"
    """--score-function pace: the norm over the policy's parameters (the paper's "policy parameter change": all but
    the critic's) or over all of them."""
    pace_step: Literal["gradient", "sgd", "optimizer"] = "gradient"
    """--score-function pace: |g|^2 (the first-order step; the paper names no optimiser), the run's SGD step
    (lr x g, clipped at --max-grad-norm: levels above the cap tie) or the step the run's optimiser (Adam) would take
    next from its state (clipped as the run clips)."""
    pace_advantages: Literal["batch", "level"] = "batch"
    """--score-function pace: advantages normalised by the batch's moments (the batch's update is the mean of the
    levels') or by the level's own (PPO on the level alone)."""
    cycle_updates: int = 1
    """PPO updates a cycle keeps its levels for (plr, robust_plr): one replay decision per cycle, its episodes and
    recurrent state continued across the updates, the levels scored once over all of them at its end (meta-RL
    trials, SFL's XLand protocol: 128; `runners/plr_trials.py`)."""

    def __post_init__(self):
        check(self, self._rules)

    def ready_at(self, capacity: int) -> int:
        """The levels a buffer of `capacity` holds when replay may start (`buffer_ready`): at least
        `min_fill_ratio` of it, and at least one."""
        return max(1, math.ceil(self.min_fill_ratio * capacity))

    @staticmethod
    def _rules(c):
        c.unit("min_fill_ratio")
        if c.obj.score_function not in SCORES:
            c.add(f"--score-function must be one of {', '.join(SCORES)}, got {c.obj.score_function!r}")
        c.integer("train_levels")
        c.integer("buffer_png")
        if c.obj.cycle_updates < 1:
            c.add(f"--cycle-updates must be >= 1, got {c.obj.cycle_updates}")


@dataclasses.dataclass(frozen=True)
class ReplayConfig:
    """The replay coin of plain and robust PLR and ACCEL (their `replay` group; the parallel methods
    replay every cycle once the buffer is ready and have no coin)."""

    replay_prob: Traced[float] = 0.5
    """Probability of a replay cycle once the buffer is full enough (plr, robust_plr, accel)."""

    def __post_init__(self):
        check(self, lambda c: c.unit("replay_prob"))


@dataclasses.dataclass(frozen=True)
class MutationConfig:
    """How ACCEL and parallel ACCEL edit replayed levels (their `mutation` group)."""

    mutator: str = ""
    """The edit, one of the environment's mutators; empty = its first. maze: minimax (the default: nothing / flip
    a wall / move the goal) or four_edit (add, remove wall, move agent, goal); cartpole, pendulum: perturb;
    craftax: tiles; jaxnav: flip_goal (nothing / add a wall / move the goal, SFL's); kinetix: kinetix (the authors')."""
    n_mutations: int = 20
    """Edits per mutation."""
    mutation_criterion: MutationCriterion = "batch"
    """Parents: batch (every replayed level, one child each), easy / hard (the q lowest / highest scores, tiled)."""
    mutation_subsample: int = 4
    """q, the replayed levels mutated by --mutation-criterion easy or hard (unused by batch)."""

    def __post_init__(self):
        check(self, self._rules)

    @staticmethod
    def _rules(c):
        for name in ("mutation_subsample", "n_mutations"):
            c.integer(name)


@struct.dataclass
class PLRState:
    train_state: TrainState
    buffer: LevelBuffer
    training_set: TrainingSet  # seen seeds (a 1-seed placeholder without a finite training set)
    key: jax.Array
    updates: jax.Array  # int32: gradient updates done (a step is one cycle, with or without one)
    # With --cycle-updates K > 1 the state is `plr_trials.PLRTrialState`, which adds the cycle in progress. It is
    # not a field here, None by default: Orbax refuses to restore into a state with a field the checkpoint lacks,
    # even a None one, so such a field would make every PLR checkpoint written before it unrestorable.


class PLRFamilyRunner:
    """A PLR-family runner's context and `init(key) -> PLRState`; a method subclasses it in its own
    module, writes `step` with `plr_parts.py` and registers it with `plr_method`.

    `generator(key) -> level` makes new levels; `mutator(key, level) -> level` edits one
    (ACCEL); `level_metrics(level) -> dict of scalars` (optional) describes a level for
    the logs (walls, shortest path, solvable...), reported per group: new, replay, mutated;
    `level_identity(level) -> pytree` (optional) is what makes two levels the same level for
    the buffer's de-duplication (`--dedupe-by layout`; AMaze: not the agent's direction);
    `level_facts(levels, env_params) -> (optimal returns, solvable)` (optional) what
    `oracle_regret` and the regret metrics need.

    The class attributes below are the method's declaration, read by `plr_method` (its options and
    checks) and by the training loop; no step branches on them.
    """

    state_type = PLRState
    method: str = ""
    """The method's name (`--method`)."""
    groups: int = 1
    """Level groups of one rollout: new | replay (| mutated) for the parallel methods, else one."""
    mutates: bool = False
    """Whether the method makes new levels by editing replayed ones (built with the env's mutator)."""
    trains_only_on_replays: bool = False
    """Whether only replay cycles train (then `replay_prob` must be > 0 unless a finite training set is used)."""
    trains_every_cycle: bool = False
    """Whether every cycle makes a gradient update (plain PLR), so a unit of the update budget is one cycle."""
    keeps_cycle_levels: bool = False
    """Whether the method's cycle can keep its levels for `--cycle-updates` K > 1 PPO updates (`plr_trials.py`)."""

    def __init__(self, env, env_params, generator: Callable, model, ppo: PPOConfig, num_envs: int, num_steps: int,
                 buffer: BufferConfig, curriculum: CurriculumConfig, mutator: Callable | None = None,
                 level_metrics: Callable | None = None, level_identity: Callable | None = None,
                 shard: Shard = NO_SHARD, level_facts: Callable | None = None,
                 replay: ReplayConfig = ReplayConfig(), mutation: MutationConfig = MutationConfig()):
        d = shard.size
        global_buffer = curriculum.global_buffer
        self.env, self.env_params, self.generator, self.model, self.ppo = env, env_params, generator, model, ppo
        self.num_envs, self.num_steps = int(num_envs), int(num_steps)
        self.shard, self.global_buffer = shard, bool(global_buffer)
        self.n = self.num_envs // d  # envs per group on this device
        self.capacity = buffer.capacity if global_buffer else buffer.capacity // d
        self.buffer_cfg = dataclasses.replace(buffer, capacity=self.capacity)
        self.cur, self.mutator, self.level_metrics = curriculum, mutator, level_metrics
        self.replay, self.mutation = replay, mutation
        self.level_identity, self.level_facts = level_identity, level_facts

    @property
    def envs_per_rollout(self) -> int:
        return self.num_envs * self.groups

    @property
    def local_fields(self) -> tuple[str, ...]:
        """State fields that differ per device (a leading device axis in the global state): per-device buffers,
        and the trial in progress of a multi-update cycle (its levels and episodes are the device's envs')."""
        if not self.shard.sharded:
            return ()
        return (() if self.global_buffer else ("buffer",)) + (("trial",) if self.cur.cycle_updates > 1 else ())

    def init(self, key) -> PLRState:
        k_model, k_level, k_run = jax.random.split(key, 3)
        level = self.generator(k_level)
        state0 = self.env.init_state(level, self.env_params)
        obs = jax.tree.map(lambda x: jnp.broadcast_to(x, (self.n,) + x.shape),
                           self.env.get_obs(state0, self.env_params))
        carry = self.model.initial_carry(self.n)
        params = self.model.init(k_model, carry, jax.tree.map(lambda x: x[None], obs),
                                 jnp.ones((1, self.n), bool))
        return PLRState(train_state=create_train_state(self.model.apply, params, self.ppo),
                        buffer=init_buffer(level, self.buffer_cfg.capacity),
                        training_set=init_training_set(max(self.cur.train_levels, 1)),
                        key=k_run, updates=jnp.zeros((), jnp.int32))

    @property
    def max_idle_cycles(self) -> int:
        """Cycles without a gradient update or buffer growth after which the run is stuck (`budget.py`):
        once the buffer is ready a cycle trains with the replay probability (1 for the parallel methods; with a
        finite training set and the proportionate schedule, at least the ready fraction of its seeds)."""
        p = 1.0 if self.groups > 1 else self.replay.replay_prob
        if self.cur.train_levels and self.cur.replay_schedule != "fixed":
            p = self.cur.ready_at(self.capacity) / self.cur.train_levels
        return max_idle_cycles(p) * self.cur.cycle_updates  # a cycle of K updates grows the buffer at its end only
