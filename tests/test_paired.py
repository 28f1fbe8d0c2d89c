"""PAIRED, population PAIRED and the minimax adversary (minimax/runners/paired.py): what the
teacher is paid, what every agent trains on, the run's files, and the options' errors.

Small networks on a 5x5 maze; one compiled program per test purpose."""

import jax
import numpy as np
import pytest

from minimax.agents.ppo import ppo_update
from minimax.training.budget import make_chunk
from minimax.training.builder import build_runner, device_layout
from minimax.training.checkpoint import Checkpointer
from minimax.config import ConfigError, TrainConfig
from minimax.training.devices import distribute_init, distribute_step
from minimax.config import PRESETS
from minimax.curricula.regret import teacher_score
from minimax.envs.maze.level import Level
from minimax.evaluation.saved_policies import load_policies
from minimax.training.loop import seed_keys
from minimax.training.run_logs import read_rows
from minimax.runners.rollout import ppo_batch
from minimax.training.loop import train

pytestmark = pytest.mark.contract  # tests/conftest.py's tiers: training programs at their tiny size

# Episodes of at most 10 steps in rollouts of 24: every student finishes >= 2 episodes per level.
TINY = dict(maze_height=5, maze_width=5, n_walls=3, max_episode_steps=10, n_actions=3, recurrent_size=8,
            num_envs=4, num_steps=24, n_epochs=1, lr=3e-3, teacher_n_walls=4, teacher_conv_filters=4,
            teacher_recurrent_size=8, teacher_noise_dim=3, teacher_n_epochs=1, teacher_lr=3e-3, progress=False)


def tiny(method: str, **overrides) -> TrainConfig:
    return PRESETS[method].replace(**{**TINY, **overrides})


def numpy_scores(method: str, returns: np.ndarray, dones: np.ndarray) -> np.ndarray:
    """The teacher's reward per level, from the students' rollouts `[P, T, N]`, in NumPy: per
    student and level the mean and the best (from 0) return of the episodes that completed."""
    mean = np.zeros(returns.shape[::2])
    best = np.zeros(returns.shape[::2])
    for p in range(returns.shape[0]):
        for n in range(returns.shape[2]):
            done = returns[p, dones[p, :, n], n]
            mean[p, n] = done.mean() if done.size else 0.0
            best[p, n] = max([0.0, *done])
    if method == "paired":  # the antagonist's best over the protagonist's mean, at least 0
        return np.maximum(best[1] - mean[0], 0.0)
    if method == "pop_paired":  # the best of anyone over the population's mean
        return best.max(0) - mean.mean(0)
    return -mean.mean(0)  # minimax adversary


def check_round(method, runner, r, students: int):
    """The checks of one update's designs, plays and scores (`r`, a `Round` on the host)."""
    # Every design is a valid level, and every student plays exactly those levels, from a fresh start.
    levels = [Level(*(np.asarray(x[i]) for x in (r.levels.wall_map, r.levels.goal_pos, r.levels.agent_pos,
                                                  r.levels.agent_dir))) for i in range(runner.num_envs)]
    for level in levels:
        level.validate()
    first = jax.vmap(lambda lv: runner.env.get_obs(runner.env.init_state(lv, runner.env_params), runner.env_params))(
        r.levels)
    for p in range(students):
        for name in first:
            np.testing.assert_array_equal(np.asarray(r.students.obs[name][p, 0]), np.asarray(first[name]))
    assert r.students.reset[:, 0].all()  # each rollout starts an episode: a zero carry (see the module doc)
    dones = np.asarray(r.students.dones)
    assert (dones.sum(1) >= 2).all()
    # The teacher's reward: the score on the last design step, 0 before; the design ends there.
    want = numpy_scores(method, np.asarray(r.students.episode_returns, np.float64), dones)
    np.testing.assert_allclose(r.scores, want, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(r.design.rewards[-1], want, rtol=1e-5, atol=1e-6)
    assert (np.asarray(r.design.rewards[:-1]) == 0).all()
    assert np.asarray(r.design.dones[-1]).all() and not np.asarray(r.design.dones[:-1]).any()
    if method == "paired":
        assert (want >= 0).all()
    else:  # also the minimax adversary's reward, on the protagonist's episodes (its one student)
        assert build_runner(tiny("minimax_adversary")).score == "negative_return"
        one = (r.students.episode_returns[:1], r.students.dones[:1])
        np.testing.assert_allclose(teacher_score("negative_return", *one),
                                   numpy_scores("minimax_adversary", np.asarray(one[0], np.float64), dones[:1]),
                                   rtol=1e-5, atol=1e-6)


def test_the_paired_teacher_is_paid_its_regret_from_the_students_episodes_on_its_levels():
    runner = build_runner(tiny("paired"))
    state = jax.jit(runner.init)(jax.random.key(0))
    assert jax.tree.leaves(state.train_state.params)[0].shape[0] == 2
    check_round("paired", runner, jax.device_get(jax.jit(runner.play_round)(jax.random.key(1), state)), 2)


def test_the_population_teacher_is_paid_its_population_regret(population_update):
    cfg, state, (*_, runner_round) = population_update
    check_round("pop_paired", build_runner(cfg), runner_round, 3)


def _update(runner, state):
    """One runner step, and the same update re-done by hand: each student trained alone on its own
    rollout, and student 0 trained on student 1's rollout instead (what must not happen)."""
    key, k_round, k_students, k_teacher = jax.random.split(state.key, 4)
    after, metrics = runner.step(state)
    r = runner.play_round(k_round, state)
    keys = jax.random.split(k_students, runner.n_students)
    alone, swapped = [], None
    for i in range(runner.n_students):
        mine = jax.tree.map(lambda x, i=i: x[i], state.train_state)
        batch = ppo_batch(jax.tree.map(lambda x, i=i: x[i], r.students), runner.ppo)
        alone.append(ppo_update(keys[i], mine, batch, runner.ppo)[0].params)
        if i == 1:
            mine0 = jax.tree.map(lambda x: x[0], state.train_state)
            swapped = ppo_update(keys[0], mine0, batch, runner.ppo)[0].params
    teacher = ppo_update(k_teacher, state.teacher,
                         ppo_batch(r.design, runner.teacher_ppo),
                         runner.teacher_ppo)[0].params
    return after, metrics, alone, swapped, teacher, r


def _max_diff(a, b):
    return max(float(np.max(np.abs(np.asarray(x) - np.asarray(y)))) for x, y in
               zip(jax.tree.leaves(a), jax.tree.leaves(b)))


@pytest.fixture(scope="module")
def population_update():
    cfg = tiny("pop_paired")
    runner = build_runner(cfg)
    state = jax.jit(runner.init)(jax.random.key(0))
    return cfg, state, jax.device_get(jax.jit(lambda s: _update(runner, s))(state))


def test_each_student_trains_on_its_own_rollout_and_the_teacher_on_its_design(population_update):
    """The runner's update of every agent equals that agent's PPO update computed from nothing but
    its own state and its own data: no loss reaches another agent's parameters (the rollouts use
    the parameters from before the update, and the score reaches the teacher as data)."""
    cfg, state, (after, metrics, alone, swapped, teacher, _) = population_update
    assert int(after.updates) == 1 and int(metrics["gradient_updates"]) == 1
    # The vmapped population update is each student's own update (rounding aside: one program
    # batches what the other runs alone).
    for i, mine in enumerate(alone):
        assert _max_diff(jax.tree.map(lambda x, i=i: x[i], after.train_state.params), mine) < 1e-6, i
    assert _max_diff(after.teacher.params, teacher) < 1e-6
    # ...and the data matters: student 0 trained on student 1's rollout ends elsewhere.
    moved = _max_diff(alone[0], jax.tree.map(lambda x: x[0], state.train_state.params))
    assert _max_diff(alone[0], swapped) > 0.1 * moved > 0
    # Every agent learned something, and the logs say who is who.
    assert _max_diff(after.teacher.params, state.teacher.params) > 0
    for i in range(3):
        assert metrics[f"student{i}/return_count"] > 0
    np.testing.assert_allclose(metrics["episode_return_sum"], metrics["student0/return_sum"], rtol=1e-6)
    assert metrics["teacher/count"] == cfg.num_envs
    assert 0 <= metrics["teacher/solvable_sum"] <= cfg.num_envs


@pytest.mark.e2e  # over 20 s here (the default run leaves it out; --slow runs it)
def test_a_paired_run_resumes_and_evaluate_scores_its_protagonist(tmp_path):
    cfg = tiny("paired", out_dir=str(tmp_path), run_name="paired", num_updates=4, log_every=2,
               checkpoint_every=2, eval_every=0, num_steps=12)
    train(cfg.replace(num_updates=2))
    train(cfg.replace(resume=True))
    straight = cfg.replace(run_name="straight")
    train(straight)
    strip = lambda rows: [{k: v for k, v in r.items() if k not in ("time_s", "sps")} for r in rows]  # noqa: E731
    resumed, full = read_rows(cfg.run_dir), read_rows(straight.run_dir)
    assert strip(resumed) == strip(full) and [r["update"] for r in full] == [2, 4]
    for column in ("train/return", "student1/return", "teacher/return", "teacher/entropy", "teacher/n_walls",
                   "teacher/shortest_path", "teacher/solvable"):
        assert column in full[-1], column
    (policy,) = load_policies(cfg.run_dir)
    saved, _ = Checkpointer(cfg.run_dir / "checkpoints").restore_params()
    assert policy.agent == "its protagonist: student 0 of 2"
    for got, want in zip(jax.tree.leaves(policy.params), jax.tree.leaves(saved)):
        np.testing.assert_array_equal(got, want[0])


@pytest.mark.e2e  # over 20 s here (the default run leaves it out; --slow runs it)
def test_a_vmapped_paired_program_equals_each_seed_alone():
    """Seeds of a learned-teacher method batched in one program (`--num-seeds`, `reproduce`): each gets
    exactly its own designs, students and teacher (rounding aside: batched and single matmuls)."""
    cfg = tiny("paired", num_seeds=2, num_steps=12)
    layout = device_layout(cfg)
    runner = build_runner(cfg, layout.shard)
    keys = seed_keys(layout)[0]
    together, m_together = jax.jit(distribute_step(make_chunk(runner, 2), runner, layout))(
        jax.jit(distribute_init(runner, layout))(keys))
    alone, m_alone = jax.jit(make_chunk(runner, 2))(jax.jit(runner.init)(keys[1]))
    walls = "teacher/n_walls_sum"  # the designs: exactly the same levels
    np.testing.assert_array_equal(np.asarray(m_alone[walls]), np.asarray(m_together[walls][1]))
    mine = lambda x: x[1]  # noqa: E731
    for a, b in zip(jax.tree.leaves((alone.train_state.params, alone.teacher.params)),
                    jax.tree.leaves(jax.tree.map(mine, (together.train_state.params, together.teacher.params)))):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-4, atol=1e-5)
    assert not np.allclose(np.asarray(jax.tree.leaves(together.teacher.params)[0][0]),
                           np.asarray(jax.tree.leaves(together.teacher.params)[0][1]))  # two seeds, two teachers


def test_the_presets_are_table_5s_paired_column():
    """Typed from the report's Table 5 (PAIRED column) and, for what it leaves out, the minimax
    release's maze/paired.json (teacher network, design budget, noise)."""
    shared = dict(gamma=0.995, gae_lambda=0.98, num_steps=256, n_epochs=5, n_minibatches=1, clip_eps=0.2, num_envs=32,
                  lr=1e-4, adam_eps=1e-5, max_grad_norm=0.5, clip_value=True, value_coef=0.5, entropy_coef=1e-3,
                  num_updates=30_000, recurrent_size=256, teacher_entropy_coef=0.05, teacher_lr=1e-4,
                  teacher_gamma=0.995, teacher_gae_lambda=0.98, teacher_n_epochs=5, teacher_n_minibatches=1,
                  teacher_clip_eps=0.2, teacher_value_coef=0.5, teacher_n_walls=60, teacher_noise_dim=50,
                  teacher_conv_filters=128, teacher_recurrent_size=256, teacher_replace_wall_pos=True,
                  maze_height=13, maze_width=13, max_episode_steps=0)  # 0: the maze's own budget, 250
    for name, students, score in (("paired", 2, "relative_regret"), ("pop_paired", 3, "population_regret"),
                                  ("minimax_adversary", 1, "negative_return")):
        cfg = PRESETS[name]
        options = cfg.options()
        assert cfg.method == name and cfg.teacher.students_for(name) == students and cfg.teacher.score_for(name) == score
        # --method alone (no preset) trains the method's own population.
        plain = TrainConfig.from_options(method=name)
        assert plain.teacher.students_for(name) == students and build_runner(plain).n_students == students
        assert {k: options[k] for k in shared} == shared, name


def test_a_population_of_report_sized_students_initialises():
    """A population of 64-unit LSTM students initialises (vmapped: jaxlib 0.10's batched QR, which
    deadlocks XLA:CPU, is avoided by `models/initializers.py`) into distinct students."""
    runner = build_runner(tiny("pop_paired", recurrent_size=64))
    params = jax.jit(runner.init)(jax.random.key(0)).train_state.params
    kernel = np.asarray(params["params"]["core"]["hidden_kernel"])
    assert kernel.shape == (3, 64, 256)  # 3 students' 4 gates of 64 units
    assert np.abs(kernel[0] - kernel[1]).max() > 0  # distinct students


@pytest.mark.parametrize("overrides, message", [
    (dict(method="pop_paired", n_students=1), "population_regret needs a population: --n-students >= 2, got 1"),
    (dict(method="paired", n_students=3), "relative_regret needs --n-students 2"),
    (dict(method="minimax_adversary", n_students=2), "--method minimax_adversary trains one student: --n-students must be 1"),
    (dict(method="paired", maze_height=5, maze_width=5, n_walls=3), "--teacher-n-walls (60) is larger than a 5x5 maze allows"),
    (dict(method="paired", teacher_score="regret"), "--teacher-score must be one of relative_regret"),
    (dict(method="paired", teacher_n_minibatches=3), "--teacher-n-minibatches (3) must divide --num-envs (32)"),
])
def test_bad_teacher_options_are_one_clear_error(overrides, message):
    with pytest.raises(ConfigError, match=None) as e:
        PRESETS["paired"].replace(**overrides)
    assert message in str(e.value)
