"""The experiment loop: determinism, resume, checkpoints, logs, the CLI and the presets."""

import importlib.util
import json
import logging
import re

import jax
import numpy as np
import pytest

from minimax.training.checkpoint import CheckpointError, Checkpointer
from minimax.config import ConfigError, TrainConfig
from minimax.config import PRESETS
from minimax.training.run_logs import read_rows
from minimax.training.builder import build_runner, env_params, eval_levels
from minimax.training.loop import RunError, train
from minimax.cli.train import main
from minimax.training.cli import parse_config
from minimax.training.budget import make_chunk
from run_helpers import tiny, without_timing  # one small config shared by the run-level tests

pytestmark = pytest.mark.contract  # tests/conftest.py's tiers: training programs at their tiny size

@pytest.fixture(scope="module")
def reference_run(tmp_path_factory):
    """One uninterrupted run that several tests compare against."""
    cfg = tiny(tmp_path_factory.mktemp("runs"), run_name="reference")
    train(cfg)
    return cfg


def test_a_run_writes_config_logs_evaluations_and_checkpoints(reference_run):
    run_dir = reference_run.run_dir
    # The saved config is the resolved one: --devices 0 (all) becomes the device count used.
    assert TrainConfig.load(run_dir / "config.json") == reference_run.replace(devices=len(jax.devices()))
    rows = read_rows(run_dir)
    assert [r["update"] for r in rows] == [5, 10, 15, 20]
    assert [r["env_steps"] for r in rows] == [5 * 8 * 16 * k for k in (1, 2, 3, 4)]
    evaluated = [r["update"] for r in rows if "eval/mean_solved_rate" in r]
    assert evaluated == [10, 20]
    for name in ("SixteenRooms", "Labyrinth", "StandardMaze"):
        assert 0.0 <= rows[1][f"eval/{name}/solved_rate"] <= 1.0
    for key in ("policy_loss", "value_loss", "entropy", "approx_kl", "clip_fraction", "explained_variance",
                "grad_norm", "learning_rate", "train/return", "sps"):
        assert key in rows[0], key
    csv_lines = (run_dir / "metrics.csv").read_text().splitlines()
    header = csv_lines[0].split(",")
    assert len(csv_lines) == 5 and "eval/SixteenRooms/return" in header and "update" in header
    assert Checkpointer(run_dir / "checkpoints").steps() == [10, 20]


def test_same_seed_gives_the_same_metrics(reference_run, tmp_path):
    train(reference_run.replace(out_dir=str(tmp_path)))
    again = read_rows(tmp_path / "reference")
    assert without_timing(again) == without_timing(read_rows(reference_run.run_dir))
    other = tiny(tmp_path, run_name="other-seed", seed=1, num_updates=5, eval_every=0)
    train(other)
    assert without_timing(read_rows(other.run_dir))[0] != without_timing(read_rows(reference_run.run_dir))[0]


def test_resume_after_a_kill_equals_the_uninterrupted_run(reference_run, tmp_path, caplog):
    cfg = reference_run.replace(out_dir=str(tmp_path))
    train(cfg)
    # Simulate a kill after update 15 was logged but before the checkpoint at 20 was written.
    rows = (cfg.run_dir / "metrics.jsonl").read_text().splitlines()
    (cfg.run_dir / "metrics.jsonl").write_text("\n".join(rows[:3]) + "\n")
    import shutil
    shutil.rmtree(cfg.run_dir / "checkpoints" / "20")
    # The resumed run runs the chunk the uninterrupted run compiled in this process (`training/programs.py`):
    # neither traced, lowered nor looked up in the persistent cache (a restored state fits it as a fresh one
    # does: `devices.committed`).
    caplog.set_level(logging.DEBUG, logger="jax._src.compiler")
    main(["--resume", "--out-dir", str(tmp_path), "--run-name", "reference", "--no-progress"])
    assert not any("jit_train_chunk" in r.getMessage() for r in caplog.records), \
        [r.getMessage()[:80] for r in caplog.records]
    assert without_timing(read_rows(cfg.run_dir)) == without_timing(read_rows(reference_run.run_dir))
    csv_rows = (cfg.run_dir / "metrics.csv").read_text().splitlines()
    assert len(csv_rows) == 5  # header + 4, no duplicates
    runner = build_runner(cfg)
    abstract = jax.eval_shape(runner.init, jax.random.key(0))
    resumed, _ = Checkpointer(cfg.run_dir / "checkpoints").restore(abstract, 20)
    original, _ = Checkpointer(reference_run.run_dir / "checkpoints").restore(abstract, 20)
    jax.tree.map(np.testing.assert_array_equal, jax.random.key_data(resumed.key), jax.random.key_data(original.key))
    jax.tree.map(np.testing.assert_array_equal, resumed.train_state.params, original.train_state.params)


def test_resume_rejects_corrupt_and_incompatible_checkpoints(reference_run, tmp_path):
    cfg = reference_run.replace(out_dir=str(tmp_path), num_updates=10, eval_every=0)
    train(cfg)
    # Incompatible: the saved config now asks for a bigger network than the checkpoint holds.
    saved = json.loads((cfg.run_dir / "config.json").read_text())
    (cfg.run_dir / "config.json").write_text(json.dumps({**saved, "recurrent_size": 32}))
    with pytest.raises(CheckpointError, match="checkpoint .*10"):
        train(cfg.replace(recurrent_size=32, resume=True, num_updates=20))
    (cfg.run_dir / "config.json").write_text(json.dumps(saved))
    # Corrupt: garble every data file of the saved state.
    for path in (cfg.run_dir / "checkpoints" / "10" / "state").rglob("*"):
        if path.is_file() and path.parent.name == "d":
            path.write_bytes(b"garbage")
    with pytest.raises(CheckpointError, match="corrupt"):
        train(cfg.replace(resume=True, num_updates=20))


def test_a_bad_curriculum_option_fails_before_creating_a_run_directory(tmp_path, capsys):
    with pytest.raises(SystemExit):
        main(["--preset", "accel", "--mutation-criterion", "hard", "--mutation-subsample", "64", "--out-dir",
              str(tmp_path), "--no-progress"])
    err = " ".join(capsys.readouterr().err.replace("│", " ").split())  # tyro boxes and wraps its errors
    assert "--mutation-subsample must be in [1, --num-envs (32)] for --mutation-criterion hard, got 64" in err
    assert list(tmp_path.iterdir()) == []


def test_runs_refuse_to_overwrite_or_to_resume_nothing(tmp_path, reference_run):
    cfg = reference_run.replace(out_dir=str(tmp_path), run_name="x")
    cfg.run_dir.mkdir(parents=True)
    (cfg.run_dir / "metrics.jsonl").write_text("{}\n")
    with pytest.raises(RunError, match="already exists"):
        train(cfg)
    cfg.save(cfg.run_dir / "config.json")
    with pytest.raises(RunError, match="no checkpoint"):
        train(cfg.replace(resume=True))
    with pytest.raises(RunError, match="no run to resume"):
        parse_config(["--resume", "--out-dir", str(tmp_path), "--run-name", "missing"])


def test_a_chunk_compiles_once_and_the_state_has_no_weak_types(tmp_path):
    cfg = tiny(tmp_path)
    runner = build_runner(cfg)
    state = jax.jit(runner.init)(jax.random.key(0))
    weak = [jax.tree_util.keystr(p) for p, x in jax.tree_util.tree_flatten_with_path(state)[0]
            if getattr(x, "weak_type", False)]
    assert weak == []
    chunk = jax.jit(make_chunk(runner, 2))
    state, _ = chunk(state)
    state, _ = chunk(state)
    assert chunk._cache_size() == 1


# ----------------------------------------------------------------------------- command line


@pytest.mark.parametrize("args, message", [
    (["--lr", "-1"], "--lr must be > 0"),
    (["--n-minibatches", "3"], "--n-minibatches (3) must divide --num-envs (32)"),
    (["--eval-every", "15"], "--eval-every (15) must be a multiple of --log-every (10)"),
    (["--gamma", "1.5"], "--gamma must be in [0, 1]"),
    (["--eval-suite", "NoSuchMaze"], "--eval-suite: unknown OOD maze 'NoSuchMaze'"),
    (["--agent-view-size", "4"], "--agent-view-size must be an odd int"),
    (["--n-walls", "200"], "--n-walls must be <= 167"),
    (["--method", "bogus"], "--method"),
    (["--bogus-option", "1"], "--bogus-option"),
])
def test_cli_rejects_bad_values_naming_the_option(args, message, capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(args)
    assert exit_info.value.code == 2
    # (the first command of a process also names its compilation cache, on a line of its own)
    lines = [line for line in capsys.readouterr().err.splitlines() if not line.startswith("compilation cache:")]
    # A bad value, even a group's checked while tyro builds it, and a flag no option has: one line of ours.
    assert len(lines) == 1 and lines[0].startswith("error: ") and message in lines[0], lines


def test_cli_rejects_an_unknown_preset_and_resume_changes_that_alter_the_run(reference_run, capsys):
    with pytest.raises(SystemExit):
        main(["--preset", "nope"])
    # The message names every registered preset, in registration order (the report's methods first).
    assert list(PRESETS)[:6] == ["dr", "plr", "accel", "pplr", "paccel", "paired"]
    assert f"error: --preset must be one of {', '.join(PRESETS)}, got 'nope'" in capsys.readouterr().err
    with pytest.raises(ConfigError, match=r"--lr \(saved 0.003, given 0.1\)"):
        parse_config(["--resume", "--out-dir", reference_run.out_dir, "--run-name", "reference", "--lr", "0.1"])
    # Extending a run is allowed.
    cfg = parse_config(["--resume", "--out-dir", reference_run.out_dir, "--run-name", "reference",
                        "--num-updates", "40"])
    assert cfg.num_updates == 40 and cfg.resume and cfg.ppo.lr == reference_run.ppo.lr


def test_the_cli_presets_are_the_config_presets():
    """The values themselves are checked against the report's Table 5 in test_plr_runners.py."""
    for name in PRESETS:
        if name.startswith("kinetix_") and importlib.util.find_spec("kinetix") is None:
            continue  # building the config loads the environment
        if name.startswith("jaxnav_") and importlib.util.find_spec("jaxmarl") is None:
            continue  # as for Kinetix (jaxmarl: the `jaxnav` extra, which the newest leg leaves out)
        cfg = parse_config(["--preset", name])
        if name.startswith("xland_"):  # SFL's XLand runs: meta-RL trials of 4,096 steps, episodes of 507
            assert cfg == PRESETS[name]
            assert (cfg.env.env_name, env_params(cfg).max_steps, env_params(cfg).inner.max_steps,
                    cfg.effective_options()["eval_suite"]) == ("xland", 4096, 507, "sfl-1k")
            continue
        assert cfg == PRESETS[name]
        if name.startswith("kinetix_"):  # the Kinetix authors' runs: their env, size s
            assert (cfg.env.env_name, env_params(cfg).max_steps, cfg.effective_options()["eval_suite"],
                    cfg.eval.eval_episodes) == ("kinetix", 256, "s", 20)
            continue
        if name.startswith("jaxnav_"):  # SFL's JaxNav learner: its own env, suites and schedule
            assert (cfg.env.env_name, env_params(cfg).max_steps, [m.name for m in eval_levels(cfg)][:2],
                    cfg.eval.eval_every) == ("jaxnav", 500, ["BlankTest", "MiddleTest"], 50)
            continue
        e = cfg.env
        # The step budget and the evaluation suite are the maze's own (0 and '': the environment's).
        assert (e.maze_height, e.maze_width, env_params(cfg).max_steps, e.normalize_obs) == (13, 13, 250, True)
        assert (cfg.eval.eval_every, [m.name for m in eval_levels(cfg)], cfg.eval.eval_episodes,
                cfg.checkpoint_every) == (100, ["SixteenRooms", "Labyrinth", "StandardMaze"], 10, 1000)
    # A preset plus an override.
    assert parse_config(["--preset", "accel", "--lr", "1e-3"]).ppo.lr == 1e-3


def test_config_round_trips_through_json(tmp_path):
    cfg = PRESETS["paccel"]
    cfg.save(tmp_path / "c.json")
    assert TrainConfig.load(tmp_path / "c.json") == cfg
    saved = json.loads((tmp_path / "c.json").read_text())
    assert saved["ppo"]["lr"] == cfg.ppo.lr and saved["buffer"]["capacity"] == 4000  # the tree, as the code has it
    (tmp_path / "bad.json").write_text(json.dumps({**cfg.to_dict(), "learning_rate": 1}))
    with pytest.raises(ConfigError, match="unknown config option"):
        TrainConfig.load(tmp_path / "bad.json")
    (tmp_path / "bad.json").write_text(json.dumps({**cfg.to_dict(), "ppo": {**saved["ppo"], "lrate": 1}}))
    with pytest.raises(ConfigError, match="unknown config option.*ppo.lrate"):
        TrainConfig.load(tmp_path / "bad.json")


def test_a_run_saved_with_a_flat_config_resumes_and_evaluates(reference_run, tmp_path):
    """Run directories from before the config tree hold one flat `config.json` (option: value)."""
    import shutil  # noqa: PLC0415

    from minimax.evaluation.saved_policies import load_policies  # noqa: PLC0415

    run_dir = tmp_path / "reference"
    shutil.copytree(reference_run.run_dir, run_dir)
    moved = reference_run.replace(devices=len(jax.devices()), out_dir=str(tmp_path))
    flat = moved.options()
    assert "buffer_size" in flat and "lr" in flat and "ppo" not in flat
    (run_dir / "config.json").write_text(json.dumps(flat))
    cfg = parse_config(["--resume", "--out-dir", str(tmp_path), "--run-name", "reference", "--num-updates", "25"])
    assert cfg.replace(num_updates=20, resume=False) == moved
    assert [p.step for p in load_policies(run_dir)] == [20]


def test_every_option_is_one_flat_flag_with_help_and_a_home(monkeypatch):
    """An option is written once (its field and docstring) and is a flag, a config.json entry and a check."""
    from minimax.config import OPTIONS  # noqa: PLC0415
    from minimax.core.options import flag  # noqa: PLC0415

    import contextlib  # noqa: PLC0415
    import io  # noqa: PLC0415

    from minimax.config.table import declared_groups  # noqa: PLC0415
    from minimax.core.methods import method_names  # noqa: PLC0415
    from minimax.envs.registry import env_names  # noqa: PLC0415

    monkeypatch.setenv("COLUMNS", "100")  # one column of options: an entry starts its line

    def help_of(method, env):
        out = io.StringIO()
        with contextlib.redirect_stdout(out), pytest.raises(SystemExit):
            parse_config(["--method", method, "--env", env, "--help"])
        return out.getvalue()

    # Each option is in the --help of a method and environment that declare its group, and only there.
    shown = {}
    for method, env in [(m, "maze") for m in method_names()] + [("dr", e) for e in env_names()]:
        text, declared = help_of(method, env), declared_groups(method, env)
        for name, (group, _) in OPTIONS.items():
            # An entry starts its line (after tyro's box edge when it draws one), a mention does not.
            listed = re.search(rf"^[│|]?\s*{re.escape(flag(name))}([ ,]|$)", text, re.M) is not None
            assert listed == (group is None or group in declared), (method, env, name)
            shown[name] = shown.get(name, False) or listed
    assert all(shown.values()), [n for n, s in shown.items() if not s]
    text = " ".join(help_of("robust_plr", "maze").replace("│", " ").split())  # tyro wraps its lines
    assert "--total-gradient-steps" not in text  # derived by the builder, not an option
    assert "Level buffer capacity" in text and "Learning rate of the optimiser" in text  # the fields' docstrings
    cfg = TrainConfig.from_options(buffer_size=100, greedy_eps=0.2, lr=3e-4, n_walls=10, n_mutations=3)
    assert (cfg.buffer.capacity, cfg.buffer.eps, cfg.ppo.lr, cfg.env.n_walls, cfg.mutation.n_mutations) == (
        100, 0.2, 3e-4, 10, 3)
    assert cfg.options()["buffer_size"] == 100 and set(cfg.options()) == set(OPTIONS)
    with pytest.raises(ConfigError, match="--greedy-eps must be in"):
        cfg.replace(greedy_eps=2.0)


def test_wandb_logs_offline_without_environment_variables(tmp_path, monkeypatch):
    monkeypatch.setenv("MINIMAX_TEST_SECRET", "s3cr3t-value-8841")
    monkeypatch.delenv("WANDB_API_KEY", raising=False)
    monkeypatch.setenv("NETRC", str(tmp_path / "no-netrc"))
    monkeypatch.setenv("WANDB_SILENT", "true")
    cfg = tiny(tmp_path, run_name="wb", num_updates=5, eval_every=0, checkpoint_every=0, wandb=True)
    train(cfg)
    runs = list((cfg.run_dir / "wandb").glob("offline-run-*"))
    assert len(runs) == 1
    for path in cfg.run_dir.rglob("*"):
        if path.is_file():
            data = path.read_bytes()
            assert b"s3cr3t-value-8841" not in data and b"MINIMAX_TEST_SECRET" not in data, path


# Seeds vmapped in one program (each equal to the seed alone) are tested in tests/test_scale.py.
