"""Kinetix as a UED environment: step for step the authors' own env object from the same level with
the same actions, their sampler, mutator and hand-designed held-out levels, and whole runs."""

import json

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.extend.core import ClosedJaxpr

pytest.importorskip("jax2d")
pytest.importorskip("kinetix")

from minimax.cli.train import main  # noqa: E402
from minimax.envs.kinetix import (  # noqa: E402
    KinetixParams, KinetixSingle, canonical_level, held_out, level_names, make_kinetix_generator,
    make_kinetix_mutator, noop_solves,
)
from minimax.envs.kinetix.engine import (  # noqa: E402
    UEDParams, load_evaluation_levels, make_mutate_env, sample_kinetix_level,
)
from minimax.envs.kinetix.env import fit_level  # noqa: E402
from minimax.envs.kinetix.levels import check_suite, suite_sizes  # noqa: E402
from minimax.envs.registry import get_env  # noqa: E402
from minimax.evaluation.evaluate import main as evaluate_main  # noqa: E402
from minimax.training.loop import train  # noqa: E402
from minimax.training.run_logs import read_rows  # noqa: E402
from run_helpers import tiny  # noqa: E402

pytestmark = pytest.mark.contract  # tests/conftest.py's tiers: training programs at their tiny size

PARAMS = KinetixParams()
ENV = KinetixSingle()
N_STEPS = 40


def assert_same_tree(a, b):
    assert jax.tree.structure(a) == jax.tree.structure(b)
    for x, y in zip(jax.tree.leaves(a), jax.tree.leaves(b)):
        np.testing.assert_array_equal(np.asarray(x), np.asarray(y))


@pytest.fixture(scope="module")
def both_sides():
    """One program: our generated level and the authors' sampler's from the same key, then an episode of
    random multi-discrete actions on ours and on their env object (reset with the level as override)."""
    env, env_params, static = PARAMS.objects()

    @jax.jit
    def run(key):
        key_level, key_actions = jax.random.split(key)
        ours = make_kinetix_generator(PARAMS)(key_level)
        theirs = sample_kinetix_level(key_level, env.physics_engine, env_params, static, UEDParams())
        actions = jax.vmap(ENV.action_space(PARAMS).sample)(jax.random.split(key_actions, N_STEPS))

        def step(carry, action):
            state, their_state = carry
            state, r, d, info = ENV.step_env(jax.random.key(0), state, action, PARAMS)
            o2, their_state, r2, d2, info2 = env.step_env(jax.random.key(0), their_state, action, env_params)
            return (state, their_state), (ENV.get_obs(state, PARAMS), r, d, info["solved"], o2, r2, d2, info2["GoalR"])

        start = ENV.init_state(ours, PARAMS)
        their_obs, their_start = env.reset(jax.random.key(1), env_params, override_reset_state=theirs)
        _, trace = jax.lax.scan(step, (start, their_start), actions)
        return ours, theirs, start, their_obs, trace
    return run(jax.random.key(7))


@pytest.mark.reference  # the authors' Kinetix code run live beside ours (a minute)
def test_generated_levels_are_the_authors_sampler(both_sides):
    ours, theirs, *_ = both_sides
    assert_same_tree(ours, canonical_level(theirs))
    assert int(ours.timestep) == 0 and float(ours.last_distance) == -1.0
    assert all(not getattr(x, "weak_type", False) for x in jax.tree.leaves(ours))


@pytest.mark.reference  # the authors' Kinetix code run live beside ours (a minute)
def test_an_episode_is_the_authors_step_for_step(both_sides):
    _, _, start, their_obs, (obs, r, d, solved, o2, r2, d2, goal) = both_sides
    np.testing.assert_array_equal(np.asarray(ENV.get_obs(start, PARAMS)), np.asarray(their_obs))
    first = int(np.argmax(np.asarray(d2))) + 1 if np.any(d2) else N_STEPS  # up to their first done
    assert first > 1, "the episode should run for a few steps"
    np.testing.assert_array_equal(np.asarray(obs[:first]), np.asarray(o2[:first]))
    np.testing.assert_array_equal(np.asarray(r[:first]), np.asarray(r2[:first]))
    np.testing.assert_array_equal(np.asarray(d[:first]), np.asarray(d2[:first]))
    np.testing.assert_array_equal(np.asarray(solved[:first]), np.asarray(goal[:first]))
    assert obs.shape == (N_STEPS, 140) and ENV.action_space(PARAMS).nvec == (3, 3, 3, 3, 2, 2)


def all_consts(closed):
    """The constants of a closed jaxpr and of every jaxpr nested in its equations, in order."""
    found = list(closed.consts)
    for eqn in closed.jaxpr.eqns:
        for param in eqn.params.values():
            for sub in param if isinstance(param, (tuple, list)) else (param,):
                if isinstance(sub, ClosedJaxpr):
                    found += all_consts(sub)
    return found


@pytest.mark.reference  # the authors' Kinetix code run live beside ours (a minute)
def test_mutations_are_the_authors_for_every_key_and_level(both_sides):
    """Our mutator traces to the authors' program (`make_mutate_env` for the level's size class, their
    default UED parameters, 5 edits), operation for operation and constant for constant: the same
    output for every key and level, checked without compiling their copy too. Ours then runs once."""
    level = both_sides[0]
    _, env_params, static = PARAMS.objects()
    theirs = make_mutate_env(static, env_params, UEDParams())  # built outside the trace, as the authors do
    key = jax.random.key(3)
    ours_program = jax.make_jaxpr(make_kinetix_mutator(5))(key, level)
    their_program = jax.make_jaxpr(lambda k, lv: canonical_level(theirs(k, lv, 5)))(key, level)
    assert str(ours_program.jaxpr) == str(their_program.jaxpr)
    ours_consts, their_consts = all_consts(ours_program), all_consts(their_program)
    assert len(ours_consts) == len(their_consts)
    for a, b in zip(ours_consts, their_consts):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    ours = jax.jit(make_kinetix_mutator(5))(key, level)
    assert jax.tree.map(lambda a: (a.shape, a.dtype), ours) == jax.tree.map(lambda a: (a.shape, a.dtype), level)
    assert any(not np.array_equal(a, b) for a, b in zip(jax.tree.leaves(ours), jax.tree.leaves(level)))
    assert make_kinetix_mutator(0)(key, level) is level
    with pytest.raises(ValueError, match="n_edits"):
        make_kinetix_mutator(-1)


@pytest.mark.reference  # the authors' Kinetix code run live beside ours (a minute)
def test_held_out_levels_are_the_authors_hand_designed_ones():
    names = level_names("s")
    assert len(names) == 10 and names[0] == "s/h0_weak_thrust" and len(level_names("m")) == 24
    levels = held_out("s")
    assert [lv.name for lv in levels] == list(names)
    theirs, _ = load_evaluation_levels(["s/h4_thrust_aim"], static_env_params_override=PARAMS.objects()[2])
    assert_same_tree(levels[4].fixed_level, canonical_level(jax.tree.map(lambda x: x[0], theirs)))
    assert levels[4].params_for(PARAMS) == PARAMS
    # Below the run's size class, a level plays in the run's slots, padded as the authors' loader pads it.
    m = KinetixParams(size="m")
    assert levels[4].params_for(m) == m.replace(level_size="s")
    theirs_m, _ = load_evaluation_levels(["s/h4_thrust_aim"], static_env_params_override=m.objects()[2])
    assert_same_tree(canonical_level(fit_level(levels[4].fixed_level, m)),
                     canonical_level(jax.tree.map(lambda x: x[0], theirs_m)))
    assert fit_level(levels[4].fixed_level, PARAMS) is levels[4].fixed_level
    with pytest.raises(ValueError, match="does not fit the slots of size s"):
        fit_level(canonical_level(jax.tree.map(lambda x: x[0], theirs_m)), PARAMS)
    with pytest.raises(ValueError, match="holds size-m levels, larger than this run's size s"):
        check_suite("m", PARAMS)
    with pytest.raises(ValueError, match="known suites: s, m, l, all"):
        held_out("xl")
    assert suite_sizes("all") == ("s", "m", "l") and sum(len(level_names(z)) for z in suite_sizes("all")) == 74
    spec = get_env("kinetix")
    assert spec.default_suite_for(tiny("/tmp", env="kinetix", kinetix_size="m").env) == "m"


@pytest.mark.reference  # the authors' Kinetix code run live beside ours (a minute)
def test_the_noop_filter_is_the_authors():
    """`noop_solves` against the authors' filter rollout (their auto-resetting `step` with the zero action,
    the reward at the first done > 0.5), over 16 generated levels. The filtered generator itself runs in
    the SFL run below (`kinetix_filter_steps`)."""
    env, env_params, _ = PARAMS.objects()
    n_levels, n_steps = 16, 32

    @jax.jit
    def run(key):
        levels = jax.vmap(make_kinetix_generator(PARAMS))(jax.random.split(key, n_levels))
        ours = jax.vmap(lambda lv: noop_solves(lv, PARAMS, n_steps))(levels)

        def step(states, _):
            zero = jnp.zeros((n_levels, 6), jnp.int32)
            _, states, r, d, _ = jax.vmap(env.step, in_axes=(0, 0, 0, None, 0))(
                jax.random.split(jax.random.key(0), n_levels), states, zero, env_params, levels)
            return states, (d, r)
        _, (done, reward) = jax.lax.scan(step, levels, None, length=n_steps)
        return ours, reward[jnp.argmax(done, axis=0), jnp.arange(n_levels)] > 0.5
    ours, theirs = run(jax.random.key(11))
    np.testing.assert_array_equal(np.asarray(ours), np.asarray(theirs))
    with pytest.raises(ValueError, match="filter_steps"):
        make_kinetix_generator(PARAMS, filter_steps=-1)


def test_the_filtered_generator_keeps_the_level_the_noop_action_does_not_solve(monkeypatch):
    """Of the 2 levels a key samples, the one the no-op action solves is kept with weight 0.001 against 1
    (stand-ins for the sampler and the no-op rollout: the choice itself, without compiling the physics;
    `benchmarks/kinetix_throughput.py --modes ours-gen-filter` runs the real one)."""
    from minimax.envs.kinetix import levels as kinetix_levels

    monkeypatch.setattr(kinetix_levels, "sample_level", lambda key, params: jax.random.uniform(key, (3,)))
    monkeypatch.setattr(kinetix_levels, "noop_solves", lambda level, params, n: level[0] < 0.5)
    generate = kinetix_levels.make_kinetix_generator(PARAMS, filter_steps=8)
    keys = jax.random.split(jax.random.key(0), 4000)
    kept = np.asarray(jax.jit(jax.vmap(generate))(keys))
    candidates = np.asarray(jax.vmap(lambda k: jax.vmap(lambda c: jax.random.uniform(c, (3,)))(
        jax.random.split(jax.random.split(k)[0], 2)))(keys))
    first = np.all(kept == candidates[:, 0], axis=1)
    assert np.all(first | np.all(kept == candidates[:, 1], axis=1))  # always one of the two
    solved = candidates[:, :, 0] < 0.5
    one_solved = solved[:, 0] != solved[:, 1]
    kept_solved = kept[:, 0] < 0.5
    assert np.sum(kept_solved & one_solved) < 10  # expected ~2000 x 0.001 = 2
    neither = ~solved.any(axis=1)  # equal weights: either candidate, evenly
    assert 0.4 < np.mean(first[neither]) < 0.6


KIN = dict(env="kinetix", recurrent_cell="none", mlp_hidden=16, num_envs=4, num_steps=16, num_updates=4, log_every=2,
           checkpoint_every=2, eval_every=0, eval_episodes=1, max_episode_steps=24)


@pytest.mark.e2e
def test_robust_plr_on_kinetix_trains_and_evaluates(tmp_path):
    """Two seeds in one program, with a buffer of Kinetix levels; `evaluate.py` scores both seeds on the
    run's own size class (the default suite). Resuming is environment-agnostic (tests/test_train.py,
    test_jaxnav.py) and a Kinetix program takes a minute to compile here, so it is the checkpoint of
    Kinetix levels that is checked below, not a second run."""
    cfg = tiny(tmp_path / "a", **KIN, method="robust_plr", num_seeds=2, buffer_size=16, min_fill_ratio=0.25,
               run_name="reference")
    train(cfg)
    rows = read_rows(cfg.run_dir)
    assert [r["update"] for r in rows] == [2, 2, 2, 4, 4, 4]
    assert rows[-1]["buffer/size"] > 0 and np.isfinite(rows[-1]["policy_loss"]) and rows[-1]["new/n_shapes"] >= 1
    evaluate_main([str(cfg.run_dir), "--episodes", "1", "--out", str(tmp_path / "e")])
    doc = json.loads((tmp_path / "e" / "results.json").read_text())
    assert len(doc["runs"]) == 2 and list(doc["runs"][0]["mazes"]) == list(level_names("s"))


@pytest.mark.e2e  # the authors' code compiled beside ours: over a minute here; CI's floor leg runs it
def test_a_checkpoint_restores_kinetix_levels_exactly(both_sides, tmp_path):
    """A PLR buffer of Kinetix scenes (mixed int, float and bool leaves) through our orbax checkpoint."""
    from minimax.training.checkpoint import Checkpointer

    levels = jax.tree.map(lambda *x: jnp.stack(x), both_sides[0], held_out("s")[3].fixed_level)
    checkpoints = Checkpointer(tmp_path / "checkpoints")
    checkpoints.save(7, {"levels": levels}, {"update": 7})
    restored, meta = checkpoints.restore({"levels": jax.tree.map(jnp.zeros_like, levels)})
    assert meta["update"] == 7
    assert_same_tree(restored["levels"], levels)
    assert jax.tree.map(lambda a: a.dtype, restored["levels"]) == jax.tree.map(lambda a: a.dtype, levels)


def test_methods_that_cannot_apply_are_refused(tmp_path, capsys, monkeypatch):
    import minimax.envs.kinetix.levels as kinetix_levels

    # The checks refuse a suite of another size class, or an unknown one, without reading its level files
    # (`UEDEnv.check_suite`; size m's 24 files took about 45 s to load here just to be refused).
    monkeypatch.setattr(kinetix_levels, "held_out_levels", lambda size: pytest.fail(f"loaded suite {size}"))
    for extra, message in ((["--method", "paired"], "--env kinetix has none"),
                           (["--eval-suite", "m"], "holds size-m levels, larger than this run's size s"),
                           (["--kinetix-size", "m", "--eval-suite", "all"], "its suites are s, m"),
                           (["--student", "transformer"], "add --kinetix-obs entity"),
                           (["--kinetix-obs", "entity", "--student", "mlp"], "use --student transformer"),
                           (["--kinetix-obs", "entity", "--transformer-heads", "6"], "a multiple of 4"),
                           (["--kinetix-size", "m", "--eval-suite", "xl"], "unknown Kinetix held-out suite 'xl'"),
                           (["--method", "robust_plr", "--score-function", "oracle_regret"], "oracle_regret"),
                           (["--method", "robust_plr", "--score-function", "least_confidence"], "least_confidence")):
        with pytest.raises(SystemExit):
            main(["--env", "kinetix", *extra, "--out-dir", str(tmp_path), "--no-progress"])
        assert message in capsys.readouterr().err
    # evaluate.py on a size-s run: a larger class's suite is one line, before any level file is read.
    from minimax.evaluation.evaluate import EvaluateError, load_mazes

    with pytest.raises(EvaluateError, match="holds size-m levels, larger than this run's size s"):
        load_mazes("m", [], get_env("kinetix"), tiny(tmp_path, env="kinetix").env)


def test_a_level_file_names_hand_designed_levels_and_bad_ones_are_one_line(tmp_path, capsys, monkeypatch):
    """`--train-level-file` / `evaluate.py --levels` for Kinetix: `<size>/<level>` names, one per line (the
    authors' `train_levels_list`); the training levels must be the run's size class. The levels are stand-ins
    here (reading the wheel's files costs seconds); the size-m run below trains on the real ones."""
    import minimax.envs.kinetix.levels as kinetix_levels
    from minimax.envs.kinetix.levels import check_training_level, load_level_file

    names = level_names("s")
    stand_ins = {size: tuple((n, object()) for n in level_names(size)) for size in ("s", "m")}
    monkeypatch.setattr(kinetix_levels, "held_out_levels", stand_ins.get)
    good = tmp_path / "good.txt"
    good.write_text(f"# two levels\n{names[3]}\n\n{names[0]}  # the first\n")
    entries = load_level_file(str(good))
    by_name = {h.name: h for h in held_out("s")}
    assert [e.name for e in entries] == [names[3], names[0]] and entries[0].fixed_level is by_name[names[3]].fixed_level
    assert check_training_level(entries[0], tiny(tmp_path, env="kinetix").env) is None
    assert check_training_level(entries[0], tiny(tmp_path, env="kinetix", kinetix_size="m").env) == \
        f"level {names[3]!r} is size s, the training levels are --kinetix-size m"
    for text, message in ((f"{names[0]}\ns/no_such_level\n", "line 2: 's/no_such_level' is not a hand-designed"),
                          ("xl/h0\n", "line 1: 'xl/h0' is not a hand-designed Kinetix level"),
                          ("# nothing\n", "names no level")):
        (tmp_path / "bad.txt").write_text(text)
        with pytest.raises(ValueError, match=message):
            load_level_file(str(tmp_path / "bad.txt"))
    with pytest.raises(ValueError, match="cannot read Kinetix level file"):
        load_level_file(str(tmp_path / "missing.txt"))
    with pytest.raises(SystemExit):  # refused before anything is built
        main(["--env", "kinetix", "--kinetix-size", "m", "--train-level-file", str(good), "--out-dir", str(tmp_path),
              "--no-progress"])
    assert "is size s, the training levels are --kinetix-size m" in capsys.readouterr().err


def test_presets_are_the_kinetix_authors_configuration():
    """`configs/ppo.yaml`, `plr.yaml`, `sfl.yaml` of FLAIROx/Kinetix (ppo-base, ued/plr, ued/accel, ued/sfl)."""
    from minimax.config import PRESETS

    dr, plr, accel, sfl = (PRESETS[f"kinetix_{m}"].options() for m in ("dr", "plr", "accel", "sfl"))
    want = dict(env="kinetix", kinetix_size="s", method="dr", num_envs=2048, num_steps=64, num_updates=8192,
                lr=5e-5, anneal_lr=False, gamma=0.995, gae_lambda=0.9, n_epochs=8, n_minibatches=32, clip_eps=0.2,
                entropy_coef=0.01, max_grad_norm=1.0, kinetix_filter_steps=0, eval_episodes=20)
    assert {k: dr[k] for k in want} == want
    assert dr["num_envs"] * dr["num_steps"] * dr["num_updates"] == 2**30
    want_plr = dict(method="plr", buffer_size=4000, replay_prob=0.5, score_function="maxmc", score_transform="rank",
                    staleness_coef=0.3, min_fill_ratio=0.5, unique_levels=False, kinetix_filter_steps=64)
    assert {k: plr[k] for k in want_plr} == want_plr and accel["method"] == "accel" and accel["n_mutations"] == 5
    want_sfl = dict(method="sfl", sfl_batches=3, sfl_batch_levels=4096, sfl_rollout_steps=512, sfl_set_size=1024,
                    sfl_refresh_every=128, sfl_set_fraction=0.5, num_steps=256)
    assert {k: sfl[k] for k in want_sfl} == want_sfl


def test_the_transformer_presets_are_the_others_with_the_authors_student():
    from minimax.config import PRESETS

    for method in ("dr", "plr", "sfl"):
        base, with_transformer = (PRESETS[f"kinetix_{method}{s}"].options() for s in ("", "_transformer"))
        differ = {k for k in base if base[k] != with_transformer[k]}
        assert differ == {"preset", "kinetix_obs", "student"}, method
        assert (with_transformer["kinetix_obs"], with_transformer["student"]) == ("entity", "transformer")
        assert with_transformer["transformer_layers"] == 2 and with_transformer["transformer_heads"] == 8


@pytest.mark.e2e  # a size-m Kinetix program with a transformer student: about a minute here
def test_a_transformer_trained_on_m_scores_the_s_suite_padded_and_reports_per_size(tmp_path):
    """DR with a small entity transformer on two size-m scenes of a level file (the authors' `train_level_mode:
    list`; the size-m sampler would add two minutes of compilation, and the generator is tested above), then
    `evaluate.py --suite s`: the size-s levels play in the run's size-m slots (padded at reset), one row per
    level, beside the suite mean."""
    levels = tmp_path / "m_levels.txt"
    levels.write_text("# two of the hand-designed size-m levels\n" + "\n".join(level_names("m")[:2]) + "\n")
    small = dict(kinetix_size="m", kinetix_obs="entity", student="transformer", transformer_width=16,
                 transformer_qkv=8, transformer_head_width=16, transformer_head_layers=1, num_updates=2,
                 train_level_file=str(levels))
    cfg = tiny(tmp_path / "t", **{**KIN, **small}, method="dr", run_name="transformer")
    train(cfg)
    rows = read_rows(cfg.run_dir)
    assert rows[-1]["update"] == 2 and np.isfinite(rows[-1]["policy_loss"])
    evaluate_main([str(cfg.run_dir), "--suite", "s", "--episodes", "1", "--out", str(tmp_path / "e")])
    doc = json.loads((tmp_path / "e" / "results.json").read_text())
    assert list(doc["runs"][0]["mazes"]) == list(level_names("s"))
    assert 0.0 <= doc["summary"]["suite_mean"]["solved_rate"]["mean"] <= 1.0


def test_a_suite_of_several_size_classes_is_reported_per_class():
    """`all` (levels named `<size>/<level>`) gets a mean per size class beside the suite mean, as the authors
    report S / M / L / all; a suite of one class (or unprefixed names) gets the suite mean only."""
    from types import SimpleNamespace

    from minimax.evaluation.report import level_groups, summarize

    names = ["s/a", "s/b", "m/c", "l/d"]
    results = [{"mazes": {n: {"solved_rate": v, "return": v, "length": 1.0, "gap": 0.0}
                          for n, v in zip(names, values)}} for values in ([1, 0, 1, 0], [1, 1, 0, 0])]
    mazes = [SimpleNamespace(name=n) for n in names]
    assert level_groups(mazes) == {"s": ["s/a", "s/b"], "m": ["m/c"], "l": ["l/d"]}
    summary = summarize(results, mazes)
    assert [summary[f"{g}_mean"]["solved_rate"]["mean"] for g in "sml"] == [0.75, 0.5, 0.0]
    assert summary["suite_mean"]["solved_rate"]["mean"] == pytest.approx(0.5)
    assert level_groups(mazes[:2]) == {} and level_groups([SimpleNamespace(name="SixteenRooms")] + mazes) == {}


@pytest.mark.e2e  # over 20 s here (the default run leaves it out; --slow runs it)
def test_pictures_of_levels_and_episodes():
    from minimax.envs.kinetix.render import render_episode, render_levels, trace_state

    levels = [h.fixed_level for h in held_out("s")[:2]]
    images = render_levels(jax.tree.map(lambda *x: np.stack(x), *levels))
    assert images.shape == (2, 125, 125, 3) and images.dtype == np.uint8 and not np.array_equal(images[0], images[1])
    first = trace_state(ENV.init_state(levels[0], PARAMS))
    # Five frames with every position shifted 0.3 further each step.
    trace = {k: np.stack([np.asarray(v) + 0.3 * t * k.endswith("position") for t in range(5)])
             for k, v in first.items()}
    frames = render_episode(levels[0], trace, PARAMS)
    assert frames.shape == (5, 125, 125, 3) and not np.array_equal(frames[0], frames[-1])
    np.testing.assert_array_equal(frames[0], images[0])
