"""Hyperparameters as data (`config/hyperparams.py`, `training/programs.py`, `training/group.py`): a traced
option is a program's input, so one compiled program trains every value of it, a resume in the same process
compiles nothing, and a sweep's points train as lanes of one program, each written as its lone run."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from minimax.cli.sweep import main as sweep
from minimax.config import ConfigError, TrainConfig
from minimax.config.hyperparams import hp_arrays, hyperparams, static_part, traced_options
from minimax.training.devices import plan_layout
from minimax.training.loop import train
from minimax.training.make_train import make_train
from minimax.training.programs import forget_programs, program_key, programs
from minimax.training.run_logs import read_rows
from run_helpers import TINY, tiny, without_timing

pytestmark = pytest.mark.contract  # tests/conftest.py's tiers: training programs at their tiny size

SMALL = dict(TINY, num_updates=2, log_every=1, eval_every=0, checkpoint_every=1)


def test_each_option_is_static_or_traced_on_its_field():
    traced = set(traced_options())
    assert {"lr", "gamma", "gae_lambda", "clip_eps", "entropy_coef", "value_coef", "max_grad_norm", "replay_prob",
            "temperature", "staleness_coef", "teacher_lr", "novelty_coef", "traced_lr", "ncc_meta_lr"} <= traced
    assert not traced & {"num_envs", "num_steps", "buffer_size", "n_epochs", "method", "score_function",
                         "anneal_lr", "min_fill_ratio", "sfl_set_fraction"}
    cfg = TrainConfig.from_options(method="dr")
    assert set(hyperparams(cfg)) == {"lr", "adam_eps", "max_grad_norm", "gamma", "gae_lambda", "clip_eps",
                                     "entropy_coef", "value_coef", "reward_scale"}  # DR reads no buffer option
    assert static_part(cfg.replace(lr=3e-3, gamma=0.9)) == static_part(cfg)
    assert static_part(cfg.replace(num_envs=16)) != static_part(cfg)


def test_a_traced_value_trains_as_the_config_with_that_value():
    """`train(key, hp)` at lr 1e-3 is the run of a config whose lr is 1e-3 (and not the config's own lr)."""
    base = TrainConfig.from_options(**{**SMALL, "lr": 3e-3})
    keys = jax.random.split(jax.random.key(0), 2)
    other = jax.jit(jax.vmap(make_train(base.replace(lr=1e-3))))(keys)["metrics"]
    train_fn = jax.jit(jax.vmap(make_train(base)))
    as_data = train_fn(keys, hp_arrays(base, [{"lr": 1e-3}], repeat=2))["metrics"]
    own = train_fn(keys, hp_arrays(base, repeat=2))["metrics"]  # the same program: its own lr as data
    for name in ("value_loss", "policy_loss", "learning_rate"):
        np.testing.assert_allclose(as_data[name], other[name], rtol=1e-4, atol=1e-7)
    assert np.abs(np.asarray(own["value_loss"]) - np.asarray(other["value_loss"])).max() > 1e-6
    np.testing.assert_allclose(own["learning_rate"], 3e-3, rtol=1e-6)


def test_bad_points_are_refused_before_anything_is_traced():
    cfg = TrainConfig.from_options(**SMALL, method="robust_plr", buffer_size=16)
    with pytest.raises(ConfigError, match=r"sweep point lr=-1: --lr must be > 0"):
        hp_arrays(cfg, [{"lr": 1e-3}, {"lr": -1}])
    with pytest.raises(ConfigError, match=r"replay_prob=1.5.*--replay-prob must be in \[0, 1\]"):
        hp_arrays(cfg, [{"replay_prob": 1.5}])
    with pytest.raises(ConfigError, match="num_envs is not a traced option"):
        hp_arrays(cfg, [{"num_envs": 16}])
    with pytest.raises(ConfigError, match="hp names buffer_size"):
        make_train(cfg)(jax.random.key(0), {"buffer_size": jnp.float32(3)})
    hps = hp_arrays(cfg, [{"lr": 1e-3}, {"replay_prob": 0.9}], repeat=2)
    assert hps["lr"].shape == (4,) and list(np.asarray(hps["replay_prob"])) == pytest.approx([0.5, 0.5, 0.9, 0.9])


def test_a_resume_and_another_learning_rate_in_the_same_process_compile_nothing(tmp_path, capsys):
    cfg = tiny(tmp_path, **{**SMALL, "out_dir": str(tmp_path)}, run_name="first")
    forget_programs()  # another test of this worker may have run this shape
    train(cfg)
    assert "compiled a chunk" in capsys.readouterr().err
    kept = programs(cfg, plan_layout(cfg.seed_list, devices=1))
    compiled = dict(kept.chunks)
    train(cfg.replace(resume=True, num_updates=3))
    train(cfg.replace(run_name="second", lr=1e-3))
    assert "compiled a chunk" not in capsys.readouterr().err
    assert kept.chunks == compiled and len(read_rows(tmp_path / "first")) == 3
    layout = plan_layout(cfg.seed_list, devices=1)
    assert program_key(cfg.replace(lr=1e-3, seed=5, run_name="x"), layout) == program_key(cfg, layout)
    assert program_key(cfg.replace(num_steps=8), layout) != program_key(cfg, layout)


@pytest.mark.e2e  # the sweep's command line (tests/conftest.py's tiers)
def test_a_sweep_is_one_program_whose_points_are_their_lone_runs(tmp_path, capsys):
    """Two lr points x 2 seeds as one program of 4 lanes: each point's directory holds the rows, config and
    checkpoints its lone run writes (floats to the last bits: the program is vmapped over 4 lanes, not 2),
    resumes alone, and a static option in the grid makes a program of its own."""
    flags = [f"--{k.replace('_', '-')}={v}" for k, v in SMALL.items() if k != "progress"] + ["--no-progress"]
    with pytest.raises(SystemExit):  # --lr=0.003 would override every point's
        sweep(["--grid", "lr=1e-3,3e-3", "--seeds", "0,1", "--out-dir", str(tmp_path / "sweep"), *flags])
    assert "--lr is given to every run and varied by the grid" in capsys.readouterr().err
    flags = [f for f in flags if not f.startswith("--lr=")]
    sweep(["--grid", "lr=1e-3,3e-3", "--seeds", "0,1", "--out-dir", str(tmp_path / "sweep"), *flags])
    assert "2 points x 2 seeds as one program" in capsys.readouterr().err
    for lr in ("1e-3", "3e-3"):
        name = f"dr-lr={lr}-seeds0-1"
        alone = TrainConfig.from_options(**{**SMALL, "lr": float(lr)}, seeds="0,1", out_dir=str(tmp_path / "alone"),
                                         run_name=name)
        train(alone)
        ours, theirs = (without_timing(read_rows(d / name)) for d in (tmp_path / "sweep", tmp_path / "alone"))
        assert [r.get("seed") for r in ours] == [r.get("seed") for r in theirs] == [0, 1, "mean"] * 2
        for a, b in zip(ours, theirs):
            assert a.keys() == b.keys()
            for k, v in a.items():
                # the lanes' programs differ in their vector code, so in the last bits (approx_kl is ~1e-5)
                assert v == pytest.approx(b[k], rel=1e-3, abs=1e-5) if isinstance(v, float) else v == b[k], (k, v, b[k])
        assert sorted(p.name for p in (tmp_path / "sweep" / name / "checkpoints").iterdir()) == ["1", "2"]
    point = TrainConfig.load(tmp_path / "sweep" / "dr-lr=3e-3-seeds0-1" / "config.json")
    assert point.ppo.lr == 3e-3 and point.devices == 1
    train(point.replace(resume=True, num_updates=3))  # a point resumes alone
    assert [r["update"] for r in read_rows(point.run_dir)][-1] == 3
    rest = [f for f in flags if not f.startswith("--n-epochs")]
    sweep(["--grid", "n_epochs=1,2", "--seeds", "0", "--out-dir", str(tmp_path / "static"), *rest])
    err = capsys.readouterr().err
    assert "as one program" not in err and err.count("training ") == 2


@pytest.mark.e2e  # three pairs of programs, about 30 s each on 2 busy cores (the default run leaves it out)
@pytest.mark.parametrize("method", ["robust_plr", "accel", "paired"])
def test_a_group_point_logs_its_lone_runs_rows(tmp_path, method):
    """`train_group` of two points (a traced option each method reads) x 1 seed: each point's rows are its lone
    run's (a 2-lane program against an unvmapped one: floats to the last bits)."""
    from minimax.training.group import train_group  # noqa: PLC0415

    own = {"robust_plr": ("replay_prob", 0.8), "accel": ("staleness_coef", 0.5), "paired": ("teacher_lr", 3e-4)}
    extra = dict(teacher_n_walls=3) if method == "paired" else dict(buffer_size=16, min_fill_ratio=0.25)
    option, value = own[method]
    base = TrainConfig.from_options(**{**SMALL, "checkpoint_every": 2}, method=method, **extra)
    points = [base.replace(out_dir=str(tmp_path / "group"), run_name=f"p{i}", **{option: v})
              for i, v in enumerate((base.options()[option], value))]
    train_group(points)
    for point in points:
        train(point.replace(out_dir=str(tmp_path / "alone")))
        ours = without_timing(read_rows(point.run_dir))
        theirs = without_timing(read_rows(tmp_path / "alone" / point.run_name))
        assert len(ours) == len(theirs) == 2 and all("seed" not in r for r in ours)
        for a, b in zip(ours, theirs):
            assert a.keys() == b.keys()
            for k, v in a.items():
                close = v == pytest.approx(b[k], rel=1e-3, abs=1e-5) if isinstance(v, float) else v == b[k]
                assert close, (point.run_name, k, v, b[k])
        assert sorted(p.name for p in (point.run_dir / "checkpoints").iterdir()) == ["2"]


def test_the_persistent_cache_is_on_unless_asked_off(monkeypatch, capsys):
    from minimax.training.programs import default_cache_dir, enable_compile_cache  # noqa: PLC0415

    here = jax.config.jax_compilation_cache_dir  # the suite's (conftest): kept, as a user's own setting is
    assert enable_compile_cache() == here and enable_compile_cache() == here
    assert capsys.readouterr().err.count(f"compilation cache: {here}") <= 1  # said once per process
    assert enable_compile_cache(False) is None
    monkeypatch.setenv("MINIMAX_COMPILE_CACHE", "0")
    assert enable_compile_cache() is None and jax.config.jax_compilation_cache_dir == here
    monkeypatch.setenv("XDG_CACHE_HOME", "/somewhere")
    assert str(default_cache_dir()) == "/somewhere/minimax/jax"


def _methods():
    from minimax.core.methods import method_names  # noqa: PLC0415

    return method_names()


@pytest.mark.parametrize("method", _methods())
def test_a_state_is_made_without_reading_a_traced_value(method):
    """A program's states come from the `init` of the runner it was first built with (`programs.Programs`), whatever
    a later run's traced values: so no `init` may read one (traced: its jaxpr never uses an `hp` input)."""
    from minimax.training.builder import build_runner  # noqa: PLC0415

    extra = dict(teacher_n_walls=3) if method in ("paired", "pop_paired", "minimax_adversary") else {}
    cfg = TrainConfig.from_options(**SMALL, method=method, **extra)
    hp = hp_arrays(cfg)
    jaxpr = jax.make_jaxpr(lambda hp: build_runner(cfg, hp=hp).init(jax.random.key(0)))(hp).jaxpr
    needed = {id(v) for v in jaxpr.outvars}  # what the state depends on: a backward slice (sub-programs whole)
    for eqn in reversed(jaxpr.eqns):
        if any(id(v) in needed for v in eqn.outvars):
            needed |= {id(v) for v in eqn.invars}
    names = [jax.tree_util.keystr(path) for path, _ in jax.tree_util.tree_flatten_with_path(hp)[0]]
    read = [name for name, var in zip(names, jaxpr.invars) if id(var) in needed]
    assert not read, read
