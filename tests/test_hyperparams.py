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
from minimax.training.programs import program_key, programs
from minimax.training.run_logs import read_rows
from run_helpers import TINY, tiny, without_timing

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
    own = train_fn(keys)["metrics"]
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
                assert v == pytest.approx(b[k], rel=1e-3, abs=1e-6) if isinstance(v, float) else v == b[k], (k, v, b[k])
        assert sorted(p.name for p in (tmp_path / "sweep" / name / "checkpoints").iterdir()) == ["1", "2"]
    point = TrainConfig.load(tmp_path / "sweep" / "dr-lr=3e-3-seeds0-1" / "config.json")
    assert point.ppo.lr == 3e-3 and point.devices == 1
    train(point.replace(resume=True, num_updates=3))  # a point resumes alone
    assert [r["update"] for r in read_rows(point.run_dir)][-1] == 3
    rest = [f for f in flags if not f.startswith("--n-epochs")]
    sweep(["--grid", "n_epochs=1,2", "--seeds", "0", "--out-dir", str(tmp_path / "static"), *rest])
    err = capsys.readouterr().err
    assert "as one program" not in err and err.count("training ") == 2
