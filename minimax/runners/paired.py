"""Learned teachers: PAIRED, population PAIRED and the minimax adversary (Dennis et al., 2020).

A teacher policy designs every training level cell by cell (`envs/maze/teacher.py`) and is
trained by PPO on a score of how the students did on it. One `step` is one PPO update of every
agent, top to bottom:

1. the teacher designs `num_envs` levels (one design episode per env, from a fresh reset);
2. every student plays every level for `num_steps` steps (an env whose episode ends restarts
   the same level). The students are one population: their parameters and optimiser states
   carry a leading agent axis and one `vmap` plays and trains them all;
3. each student is trained by PPO on its own rollout, its own return;
4. the teacher's reward, paid on its last design step, is the level's score from the students'
   episodes (`curricula/regret.py`): PAIRED's relative regret (the antagonist's best return
   minus the protagonist's mean; 2 students), population PAIRED's relative population regret
   (the best return of any student minus the population's mean; N >= 2 students) or the minimax
   adversary's negative return (one student); then the teacher is trained by PPO on its design
   rollout with its own settings (`TeacherConfig`: entropy 0.05 in the report).

The rollouts use the parameters from before the update, so the teacher's data depends on the
students only through the score, and no loss reaches another agent's parameters.

Student 0 is the protagonist: the policy that is evaluated, checkpointed for `evaluate`, and
whose episodes are the run's `train/return`.

Where this differs from the minimax release, on purpose: every design episode and every
student rollout starts from a zero recurrent carry. The release starts each update's rollouts
from the carry its agents ended the previous update with (its `done` flags start at False),
so the first step on a new level sees the memory of an unrelated, earlier level. (The release's
DR does the same at each update; ours continues its episodes instead, and reproduces the
release only under `--dr-restart-each-update`.)

Data parallel (`shard`): every device designs and plays `num_envs / D` levels; the PPO updates
average gradients over devices, so the state stays replicated (no per-device fields).
"""

from __future__ import annotations

import dataclasses
import typing
from typing import Callable, Literal

import jax
import jax.numpy as jnp
from flax import struct
from flax.training.train_state import TrainState

from minimax.agents.ppo import PPOConfig, create_train_state, ppo_update
from minimax.curricula.regret import TEACHER_SCORES, teacher_score
from minimax.core.metrics import level_metric_sums, mean_sums, reduce_over_devices
from minimax.core.options import Traced, check
from minimax.core.parallel import NO_SHARD, Shard
from minimax.models.s5 import s5_shape_problem
from minimax.runners.design import design_levels, with_final_reward
from minimax.core.methods import Method, register_method
from minimax.runners.rollout import Rollout, episode_metrics, play_levels, ppo_batch, regret_metrics

TeacherScore = Literal[tuple(TEACHER_SCORES)]

METHOD_SCORES = {"paired": "relative_regret", "pop_paired": "population_regret",
                 "minimax_adversary": "negative_return"}
"""Each learned-teacher method's reward for the teacher (`--teacher-score` overrides it)."""
METHOD_STUDENTS = {"paired": 2, "pop_paired": 3, "minimax_adversary": 1}
"""Each learned-teacher method's students when `--n-students` is 0. The report fixes only N >= 2 for
population PAIRED; 3 is ours (the smallest population that is not PAIRED's pair)."""


@dataclasses.dataclass(frozen=True)
class TeacherConfig:
    """The learned teacher (PAIRED and relatives): its design budget, network and PPO settings.
    The options the teacher does not set here (Adam epsilon, gradient clip, value clipping,
    learning-rate annealing) are the students' (`--adam-eps`, ...), as in the minimax release."""

    n_students: int = 0
    """Students trained against the teacher; 0 = the method's own: 2 for paired (protagonist, antagonist),
    3 for pop_paired (any N >= 2 is population PAIRED), 1 for minimax_adversary (the only count it takes).
    Student 0 is the protagonist (the evaluated policy)."""
    teacher_score: str = ""
    """The teacher's reward: relative_regret, mean_relative_regret, population_regret or negative_return;
    empty = the method's own (paired: relative_regret, pop_paired: population_regret, minimax_adversary:
    negative_return)."""
    teacher_n_walls: int = 60
    """Wall steps of a design (then one goal and one agent step): at most maze cells - 2."""
    teacher_noise_dim: int = 50
    """Uniform noise values in every design observation (diverse designs from one policy)."""
    teacher_replace_wall_pos: bool = True
    """A wall step may pick a cell that already holds a wall (the level then has fewer walls)."""
    teacher_conv_filters: int = 128
    """Filters of the teacher's 3x3 convolution over the whole map."""
    teacher_recurrent_cell: Literal["lstm", "gru", "s5"] = "lstm"
    """The teacher's recurrent core (s5 takes its shape from --s5-layers, --s5-blocks, --s5-layernorm)."""
    teacher_recurrent_size: int = 256
    """Units of the teacher's recurrent core."""
    teacher_lr: Traced[float] = 1e-4
    """The teacher's Adam learning rate."""
    teacher_gamma: Traced[float] = 0.995
    """The teacher's discount factor."""
    teacher_gae_lambda: Traced[float] = 0.98
    """The teacher's GAE lambda."""
    teacher_entropy_coef: Traced[float] = 0.05
    """The teacher's entropy bonus (the report's generator entropy coefficient)."""
    teacher_value_coef: Traced[float] = 0.5
    """The teacher's value loss coefficient."""
    teacher_n_epochs: int = 5
    """The teacher's PPO epochs per update."""
    teacher_n_minibatches: int = 1
    """The teacher's minibatches per epoch (must divide --num-envs)."""
    teacher_clip_eps: Traced[float] = 0.2
    """The teacher's PPO ratio (and value) clip."""

    def __post_init__(self):
        check(self, self._rules)

    def _rules(self, c):
        c.positive("teacher_conv_filters", "teacher_recurrent_size", "teacher_lr", "teacher_n_epochs",
                   "teacher_n_minibatches")
        c.non_negative("teacher_n_walls", "teacher_noise_dim", "teacher_entropy_coef", "teacher_value_coef",
                       "teacher_clip_eps")
        c.unit("teacher_gamma", "teacher_gae_lambda")
        c.integer("n_students", 0)
        if self.teacher_score and self.teacher_score not in TEACHER_SCORES:
            c.add(f"--teacher-score must be one of {', '.join(TEACHER_SCORES)} (or empty), got {self.teacher_score!r}")

    def problems(self, method: str, env, model, num_envs: int):
        """This group's values against the method, the maze (`env`, the env group), the batch and the
        S5 shape (`model`, the model group), as messages naming the flags."""
        problem = population_problem(self.score_for(method), self.students_for(method), method)
        if problem:
            yield f"{method}: {problem}"
        cells = env.maze_height * env.maze_width
        if self.teacher_n_walls > cells - 2:
            yield (f"--teacher-n-walls ({self.teacher_n_walls}) is larger than a {env.maze_height}x{env.maze_width} "
                   f"maze allows: at most {cells - 2} (its cells minus the goal and the agent)")
        if num_envs > 0 and num_envs % self.teacher_n_minibatches:
            yield f"--teacher-n-minibatches ({self.teacher_n_minibatches}) must divide --num-envs ({num_envs})"
        if self.teacher_recurrent_cell == "s5":
            problem = s5_shape_problem(self.teacher_recurrent_size, model.s5_blocks, model.s5_layers,
                                       ("--teacher-recurrent-size", "--s5-blocks", "--s5-layers"))
            if problem:
                yield problem

    def score_for(self, method: str) -> str:
        return self.teacher_score or METHOD_SCORES[method]

    def students_for(self, method: str) -> int:
        """The student count `method` trains: `--n-students`, or the method's own when it is 0."""
        return self.n_students or METHOD_STUDENTS[method]

    def ppo(self, students: PPOConfig, num_updates: int) -> PPOConfig:
        """The teacher's PPO settings: its own where it has them, the students' otherwise;
        annealing (if on) over the teacher's gradient steps in `num_updates` updates."""
        return students.replace(lr=self.teacher_lr, gamma=self.teacher_gamma, gae_lambda=self.teacher_gae_lambda,
                                entropy_coef=self.teacher_entropy_coef, value_coef=self.teacher_value_coef,
                                n_epochs=self.teacher_n_epochs, n_minibatches=self.teacher_n_minibatches,
                                clip_eps=self.teacher_clip_eps,
                                total_gradient_steps=num_updates * self.teacher_n_epochs * self.teacher_n_minibatches)


def population_problem(score: str, n_students: int, method: str = "") -> str | None:
    """Why `n_students` cannot be paid by `score` (None if it can): one message naming the flags."""
    if method == "minimax_adversary" and n_students != 1:
        return (f"--method minimax_adversary trains one student: --n-students must be 1 (or 0, the method's own), "
                f"got {n_students}; a population against the negative return is --method pop_paired "
                f"--teacher-score negative_return")
    if score in ("relative_regret", "mean_relative_regret") and n_students != 2:
        return f"--teacher-score {score} needs --n-students 2 (protagonist, antagonist), got {n_students}"
    if score == "population_regret" and n_students < 2:
        return f"--teacher-score population_regret needs a population: --n-students >= 2, got {n_students}"
    if n_students < 1:
        return f"--n-students must be >= 1, got {n_students}"
    return None


@struct.dataclass
class PAIREDState:
    train_state: TrainState  # the students: every leaf has a leading agent axis; agent 0 is the protagonist
    teacher: TrainState
    key: jax.Array
    updates: jax.Array  # int32: updates done (every agent once per update)


@struct.dataclass
class Round:
    """One update's data before training: the designs and how every student played them."""

    design: Rollout   # [design steps, n]: the teacher's episodes, its reward (the score) on the last step
    levels: typing.Any  # [n]: the designed levels
    students: Rollout  # [P, T, n]: each student's rollout on the levels
    scores: jax.Array  # [n]: the teacher's reward per level


class PAIREDRunner:
    """`init(key) -> PAIREDState`, `step(state) -> (state, metrics)`: the runner contract
    (`runners.base.Runner`) for every learned-teacher method, chosen by its score."""

    trains_every_cycle = True
    """Every step makes a gradient update (a unit of the update budget is one step, `budget.py`)."""

    state_type = PAIREDState
    evaluated_agent = 0
    """Index of the evaluated student (the protagonist) on the agent axis of `train_state`."""

    def __init__(self, env, env_params, teacher_env, teacher_params, model, teacher_model, ppo: PPOConfig,
                 teacher_ppo: PPOConfig, num_envs: int, num_steps: int, n_students: int = 2,
                 score: str = "relative_regret", level_metrics: Callable | None = None, shard: Shard = NO_SHARD,
                 level_facts: Callable | None = None):
        if (teacher_params.height, teacher_params.width) != (env_params.height, env_params.width):
            raise ValueError(f"the teacher designs {teacher_params.height}x{teacher_params.width} mazes, the "
                             f"students play {env_params.height}x{env_params.width}")
        self.env, self.env_params, self.model, self.ppo = env, env_params, model, ppo
        self.teacher_env, self.teacher_params, self.teacher_model = teacher_env, teacher_params, teacher_model
        self.teacher_ppo, self.score, self.level_metrics, self.shard = teacher_ppo, score, level_metrics, shard
        self.level_facts = level_facts
        self.num_envs, self.num_steps, self.n_students = int(num_envs), int(num_steps), int(n_students)
        self.n = self.num_envs // shard.size  # levels designed and played on this device

    local_fields: tuple[str, ...] = ()  # every field is replicated: nothing persists per device

    @property
    def env_steps_per_update(self) -> int:
        """Student steps over every device (the teacher's design steps are not env steps)."""
        return self.n_students * self.num_envs * self.num_steps

    # ------------------------------------------------------------------ setup

    def _init_student(self, key):
        level = self.teacher_env.level(self.teacher_env.reset(key, self.teacher_params)[1], self.teacher_params)
        obs = self.env.get_obs(self.env.init_state(level, self.env_params), self.env_params)
        obs = jax.tree.map(lambda x: jnp.broadcast_to(x, (1, self.n) + x.shape), obs)
        params = self.model.init(key, self.model.initial_carry(self.n), obs, jnp.ones((1, self.n), bool))
        return create_train_state(self.model.apply, params, self.ppo)

    def init(self, key) -> PAIREDState:
        k_students, k_teacher, k_run = jax.random.split(key, 3)
        # Vmapped: the orthogonal initialisers draw one QR per student (`models/initializers.py`), so
        # jaxlib 0.10's batched QR, which deadlocks XLA:CPU, is never emitted; each student's values
        # are those it gets alone.
        students = jax.vmap(self._init_student)(jax.random.split(k_students, self.n_students))
        obs, _ = self.teacher_env.reset(k_teacher, self.teacher_params)
        obs = jax.tree.map(lambda x: jnp.broadcast_to(x, (1, self.n) + jnp.shape(x)), obs)
        params = self.teacher_model.init(k_teacher, self.teacher_model.initial_carry(self.n), obs,
                                         jnp.ones((1, self.n), bool))
        teacher = create_train_state(self.teacher_model.apply, params, self.teacher_ppo)
        return PAIREDState(train_state=students, teacher=teacher, key=k_run, updates=jnp.zeros((), jnp.int32))

    # ------------------------------------------------------------------ the step

    def play_round(self, key, state: PAIREDState) -> Round:
        """Design `n` levels, let every student play them, score them (nothing is trained)."""
        k_design, k_play = jax.random.split(key)
        teacher = state.teacher
        design, levels = design_levels(k_design, self.teacher_env, self.teacher_params, teacher.apply_fn,
                                       teacher.params, self.teacher_model.initial_carry(self.n), self.n, self.shard,
                                       self.teacher_ppo.unroll)

        def play(key, params):
            return play_levels(key, self.env, self.env_params, self.model.apply, params,
                               self.model.initial_carry(self.n), levels, self.num_steps, self.shard, self.ppo.unroll)

        students = jax.vmap(play)(jax.random.split(k_play, self.n_students), state.train_state.params)
        scores = teacher_score(self.score, students.episode_returns, students.dones)
        return Round(design=with_final_reward(design, scores), levels=levels, students=students, scores=scores)

    def step(self, state: PAIREDState):
        key, k_round, k_students, k_teacher = jax.random.split(state.key, 4)
        r = self.play_round(k_round, state)
        batches = jax.vmap(lambda ro: ppo_batch(ro, self.ppo))(r.students)
        students, student_stats = jax.vmap(lambda k, ts, b: ppo_update(k, ts, b, self.ppo, self.shard))(
            jax.random.split(k_students, self.n_students), state.train_state, batches)
        design_batch = ppo_batch(r.design, self.teacher_ppo)
        teacher, teacher_stats = ppo_update(k_teacher, state.teacher, design_batch, self.teacher_ppo, self.shard)
        metrics = self.round_metrics(r, student_stats, teacher_stats)
        return PAIREDState(train_state=students, teacher=teacher, key=key, updates=state.updates + 1), metrics

    # ------------------------------------------------------------------ metrics

    def round_metrics(self, r: Round, student_stats: dict, teacher_stats: dict) -> dict:
        """The protagonist's episodes and PPO statistics under the plain names (`train/return`,
        `entropy`), every student's as `student<i>/...`, the teacher's as `teacher/...`, and the
        designed levels' statistics (`teacher/n_walls`, `teacher/shortest_path`, `teacher/solvable`, and
        `teacher/regret`: the protagonist's true regret on them, where the environment knows the optimum)."""
        per_student = jax.vmap(episode_metrics)(r.students)
        out = {k: v[self.evaluated_agent] for k, v in per_student.items()}
        out.update({k: v[self.evaluated_agent] for k, v in student_stats.items()})
        for i in range(self.n_students):
            ep = {k: v[i] for k, v in per_student.items()}
            out.update(mean_sums(f"student{i}/return", ep["episode_return_sum"], ep["episodes"]))
            out.update(mean_sums(f"student{i}/solved_rate", ep["episode_solved_sum"], ep["episodes"]))
            out[f"student{i}/entropy"] = student_stats["entropy"][i]
        out.update({f"teacher/{k}": v for k, v in teacher_stats.items()})
        out["teacher/count"] = jnp.asarray(self.n, jnp.float32)
        out["teacher/return_sum"] = r.scores.sum()  # the score is the design episode's return
        if self.level_metrics is not None:
            out.update(level_metric_sums("teacher", jax.vmap(self.level_metrics)(r.levels)))
        if self.level_facts is not None:  # the evaluated student's true regret on the designed levels
            protagonist = jax.tree.map(lambda x: x[self.evaluated_agent], r.students)
            out.update(regret_metrics("teacher", self.level_facts(r.levels, self.env_params)[0], protagonist))
        metrics = reduce_over_devices(out, self.shard)
        metrics["env_steps"] = jnp.asarray(self.env_steps_per_update, jnp.int32)
        metrics["gradient_updates"] = jnp.ones((), jnp.int32)
        metrics["cycles"] = jnp.ones((), jnp.int32)
        return metrics


def _build(parts):
    """A learned-teacher runner: the environment's design environment and network for the teacher."""
    env, env_params, _, model, students, num_envs, num_steps = parts.args
    cfg, teacher = parts.cfg, parts.spec.teacher
    return PAIREDRunner(env, env_params, teacher.env, teacher.make_params(cfg), model, teacher.make_model(cfg),
                        students, cfg.teacher.ppo(students, cfg.num_updates), num_envs, num_steps,
                        n_students=cfg.teacher.students_for(cfg.method), score=cfg.teacher.score_for(cfg.method),
                        level_metrics=parts.spec.level_metrics, shard=parts.shard, level_facts=parts.spec.level_facts)


def _teacher_problems(cfg, spec):
    """The teacher group's checks, where the environment has a design MDP (the maze's options); without one
    the config's checks already refuse the method (`config/checks.py`)."""
    if spec is None or spec.teacher is None:
        return ()
    return cfg.teacher.problems(cfg.method, cfg.env, cfg.model, cfg.num_envs)


for _name, _summary in (("paired", "PAIRED: a teacher paid the protagonist-antagonist regret designs the levels"),
                        ("pop_paired", "population PAIRED: the teacher's regret over a population of students"),
                        ("minimax_adversary", "the minimax adversary: a teacher paid the student's failure")):
    register_method(Method(_name, build=_build, summary=_summary, options={"teacher": TeacherConfig}, designs_levels=True,
                           trains_every_cycle=True, runner=PAIREDRunner,
                           problems=_teacher_problems))
