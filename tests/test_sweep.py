"""`python -m minimax.cli.sweep`: a grid over options and seeds, one program per grid point (its seeds
vmapped), or the commands for a cluster; a rerun resumes instead of retraining."""

from __future__ import annotations

import json

import pytest

from minimax.training.run_logs import read_rows
from minimax.cli.sweep import main
from release_configs import release_config

TINY = ["--maze-height", "5", "--maze-width", "5", "--n-walls", "3", "--max-episode-steps", "32", "--n-actions", "3",
        "--recurrent-size", "16", "--num-envs", "8", "--num-steps", "16", "--n-epochs", "2", "--num-updates", "2",
        "--log-every", "1", "--eval-every", "0", "--checkpoint-every", "0", "--no-progress"]


def test_a_grid_prints_one_command_per_point(tmp_path, capsys):
    main(["--preset", "plr", "--grid", "lr=1e-4,3e-4", "--grid", "unique_levels=true,false", "--seeds", "0-2",
          "--out-dir", str(tmp_path), "--print", "--num-updates", "100"])
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 4 and all(line.startswith("python train.py --preset plr ") for line in lines)
    assert "--lr 1e-4 --no-unique-levels --seeds 0,1,2" in lines[1] and lines[1].endswith("--num-updates 100")
    assert "--run-name plr-lr=3e-4-unique_levels=true-seeds0-1-2" in lines[2]


def test_a_release_grid_expands_into_release_configs(tmp_path, capsys):
    doc = release_config("plr")
    doc["args"]["plr_temp"] = [0.1, 0.3]
    path = tmp_path / "grid.json"
    path.write_text(json.dumps(doc))
    main(["--grid-file", str(path), "--out-dir", str(tmp_path), "--print"])
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 2 and "--run-name plr-plr_temp=0.3-seeds0" in lines[1]
    assert json.loads((tmp_path / "sweep-configs" / "point1.json").read_text())["args"]["plr_temp"] == [0.3]


def test_bad_grids_are_one_line_errors(tmp_path, capsys):
    for args, message in ((["--grid", "lrr=1,2"], "unknown option 'lrr'"), (["--grid", "lr"], "OPTION=V1,V2"),
                          (["--grid", "lr=-1,1e-3"], "--lr must be > 0"), ([], "give --grid")):
        with pytest.raises(SystemExit):
            main([*args, "--out-dir", str(tmp_path), "--print"])
        assert message in capsys.readouterr().err


@pytest.mark.e2e  # over 20 s here (the default run leaves it out; --slow runs it)
def test_a_sweep_trains_each_point_once_and_resumes(tmp_path):
    args = ["--grid", "lr=1e-3,3e-3", "--seeds", "0,1", "--out-dir", str(tmp_path), *TINY]
    main(args)
    runs = sorted(p.name for p in tmp_path.iterdir())
    assert runs == ["dr-lr=1e-3-seeds0-1", "dr-lr=3e-3-seeds0-1"]
    rows = {r: read_rows(tmp_path / r) for r in runs}
    assert all([x["update"] for x in v] == [1, 1, 1, 2, 2, 2] for v in rows.values())  # seeds 0, 1, mean
    main(args)  # nothing left to train: the logs are as they were
    assert {r: read_rows(tmp_path / r) for r in runs} == rows


def test_a_group_splits_into_programs_of_at_most_max_lanes():
    from types import SimpleNamespace

    from minimax.cli.sweep import split_lanes

    points = [SimpleNamespace(seed_list=[0, 1], name=i) for i in range(5)]
    assert [[p.name for p in part] for part in split_lanes(points, 4)] == [[0, 1], [2, 3], [4]]
    assert [[p.name for p in part] for part in split_lanes(points, 3)] == [[0], [1], [2], [3], [4]]
    assert split_lanes(points, 0) == [points]
