"""Learning-curve plots (`minimax.evaluation.plot`) from synthetic run directories: no JAX, a few seconds."""

import json

import numpy as np
import pytest
from PIL import Image

from minimax.evaluation.plot import group_runs, group_series, load_run, main, panel_keys, plot_runs

MAZES = ("SixteenRooms", "Labyrinth")
BUFFER = {"buffer/size": 10, "buffer/fill_ratio": 0.5, "buffer/mean_score": 0.1, "buffer/max_score": 0.3,
          "buffer/weighted_score": 0.2, "buffer/mean_staleness": 3.0, "buffer/mean_mutations": 0.0,
          "replay_fraction": 0.4}


def row(update, seed_offset=0.0, *, plr=False, eval_=None, **extra):
    r = {"update": update, "env_steps": update * 1000, "cycles": update, "time_s": 1.0, "sps": 100.0,
         "train/return": 0.1 * update + seed_offset, "train/solved_rate": None if update == 0 else 0.5}
    if eval_ is None:
        eval_ = update % 2 == 0
    for m in MAZES:
        for s in ("solved_rate", "return", "length"):
            r[f"eval/{m}/{s}"] = (0.2 + seed_offset) if eval_ else None
    r["eval/mean_solved_rate"] = r["eval/mean_return"] = (0.3 + seed_offset) if eval_ else None
    if plr:
        r.update(BUFFER)
    return r | extra


def write_run(tmp_path, name, rows, method="dr", seed=0, **cfg):
    d = tmp_path / "runs" / name
    d.mkdir(parents=True)
    config = {"method": method, "seed": seed, "run_name": name, "out_dir": str(tmp_path / "runs"),
              "lr": 1e-4, "num_updates": 10, "preset": method, "eval_suite": "validation", "resume": False}
    (d / "config.json").write_text(json.dumps(config | cfg))
    (d / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return d


def test_groups_seeds_and_methods(tmp_path):
    a = write_run(tmp_path, "dr_s0", [row(u, 0.0) for u in range(5)], seed=0)
    b = write_run(tmp_path, "dr_s1", [row(u, 1.0) for u in range(5)], seed=1, num_updates=99)
    c = write_run(tmp_path, "plr_s0", [row(u, plr=True) for u in range(5)], method="plr")
    groups = group_runs([load_run(d) for d in (a, b, c)])
    assert [g.label for g in groups] == ["dr", "plr"]
    assert [len(g.seeds) for g in groups] == [2, 1]


def test_same_method_groups_get_suffix(tmp_path):
    a = write_run(tmp_path, "lr1", [row(u) for u in range(3)], lr=1e-3)
    b = write_run(tmp_path, "lr2", [row(u) for u in range(3)], lr=1e-4)
    assert [g.label for g in group_runs([load_run(a), load_run(b)])] == ["dr (lr=0.001)", "dr (lr=0.0001)"]


def test_mean_is_numpy_mean_on_common_x(tmp_path):
    a = write_run(tmp_path, "s0", [row(u, 0.0) for u in range(6)], seed=0)
    b = write_run(tmp_path, "s1", [row(u, 2.0) for u in range(4)], seed=1)  # shorter: common x = first 4
    (group,) = group_runs([load_run(a), load_run(b)])
    x, per_seed, mean = group_series(group, "train/return", "env_steps")
    np.testing.assert_array_equal(x, [0, 1000, 2000, 3000])
    assert [len(xs) for xs, _ in per_seed] == [6, 4]
    np.testing.assert_allclose(mean, np.mean([per_seed[0][1][:4], per_seed[1][1]], axis=0))
    x, _, mean = group_series(group, "eval/mean_return", "update")  # null on odd updates: skipped
    np.testing.assert_array_equal(x, [0, 2])
    np.testing.assert_allclose(mean, [1.3, 1.3])


def test_seeds_logged_at_different_env_steps_get_an_interpolated_mean(tmp_path):
    """PLR-family seeds log at env-step counts that never coincide: the mean line is still drawn,
    on the union of their x values inside the range both cover, each seed interpolated there."""
    a = write_run(tmp_path, "s0", [row(u) | {"env_steps": 10 * u, "train/return": float(u)} for u in range(4)],
                  seed=0)  # x 0, 10, 20, 30
    b = write_run(tmp_path, "s1", [row(u) | {"env_steps": 10 * u + 5, "train/return": 3.0} for u in range(3)],
                  seed=1)  # x 5, 15, 25
    (group,) = group_runs([load_run(a), load_run(b)])
    x, _, mean = group_series(group, "train/return", "env_steps")
    np.testing.assert_array_equal(x, [5, 10, 15, 20, 25])
    np.testing.assert_allclose(mean, (np.array([0.5, 1.0, 1.5, 2.0, 2.5]) + 3.0) / 2)
    x, _, mean = group_series(group, "eval/mean_return", "env_steps")  # evaluated at 0, 20 and 5, 25
    np.testing.assert_array_equal(x, [5, 20])
    np.testing.assert_allclose(mean, [0.3, 0.3])


def test_multi_seed_rows_and_mean_rows_skipped(tmp_path):
    rows = []
    for u in range(4):
        rows += [row(u, 0.0, seed=0), row(u, 1.0, seed=1), row(u, 99.0, seed="mean")]
    run = load_run(write_run(tmp_path, "multi", rows, seed=7))
    assert sorted(run.seeds) == [0, 1] and all(len(r) == 4 for r in run.seeds.values())
    single = load_run(write_run(tmp_path, "single", [row(u) for u in range(4)], seed=7, lr=5.0))
    assert list(single.seeds) == [7]
    (group,) = group_runs([run])
    _, per_seed, mean = group_series(group, "train/return", "update")
    assert len(per_seed) == 2
    np.testing.assert_allclose(mean, np.arange(4) * 0.1 + 0.5)


def test_buffer_panels_only_for_plr(tmp_path):
    dr = load_run(write_run(tmp_path, "dr", [row(u) for u in range(4)]))
    plr = load_run(write_run(tmp_path, "plr", [row(u, plr=True) for u in range(4)], method="plr"))
    base = [f"eval/{m}/{s}" for m in MAZES for s in ("solved_rate", "return")]
    base += ["eval/mean_solved_rate", "eval/mean_return", "train/return", "train/solved_rate"]
    assert panel_keys([dr]) == base
    assert panel_keys([dr, plr]) == base + ["buffer/weighted_score", "buffer/mean_score", "buffer/fill_ratio",
                                            "buffer/mean_staleness", "replay_fraction"]
    assert panel_keys([dr, plr], ["train/return", "buffer/size"]) == ["train/return", "buffer/size"]
    no_eval = load_run(write_run(tmp_path, "noeval", [row(u, eval_=False) for u in range(4)]))
    assert panel_keys([no_eval]) == ["train/return", "train/solved_rate"]  # all-null eval columns omitted


def test_png_written(tmp_path, capsys):
    dr = write_run(tmp_path, "dr", [row(u) for u in range(6)])
    plr = write_run(tmp_path, "plr", [row(u, 0.5, plr=True) for u in range(6)], method="plr")
    out = plot_runs([dr, plr], tmp_path / "plots" / "curves.png", x="update")
    with Image.open(out) as im:
        assert im.format == "PNG" and im.width >= 800 and im.height >= 600
    main([str(dr), "--out", str(tmp_path / "sub.png"), "--metrics", "eval/mean_return,train/return"])
    assert capsys.readouterr().out.strip().endswith("sub.png")
    with Image.open(tmp_path / "sub.png") as im:
        assert im.format == "PNG" and im.width < 1000


def errors_cases(tmp_path):
    empty = tmp_path / "empty"
    empty.mkdir()
    nulls = write_run(tmp_path, "nulls", [{"update": u, "env_steps": u, "train/return": None} for u in range(3)])
    good = write_run(tmp_path, "good", [row(u) for u in range(3)])
    return {
        "missing": ([str(tmp_path / "nope")], "not found"),
        "no_metrics": ([str(empty)], "no metrics.jsonl"),
        "no_data": ([str(nulls)], "no plottable metric"),
        "unknown_metric": ([str(good), "--metrics", "train/return,eval/bogus"], "eval/bogus"),
    }


@pytest.mark.parametrize("case", ["missing", "no_metrics", "no_data", "unknown_metric"])
def test_errors_exit_2_one_line(tmp_path, capsys, case):
    argv, needle = errors_cases(tmp_path)[case]
    with pytest.raises(SystemExit) as exc:
        main(argv + ["--out", str(tmp_path / "x.png")])
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and needle in err and err.count("\n") == 1
    assert not (tmp_path / "x.png").exists()


def test_host_runs_plot_test_and_training_level_returns(tmp_path):
    """A host-environment run (Procgen) logs test/training-level returns, not maze evaluations: they are
    its panels, and runs of different lengths (`num_env_steps`) are one experiment."""
    def host_row(u, offset):
        return {"update": u, "env_steps": u * 1024, "train_return": u + offset, "sampler/mean_score": 0.1,
                "test_return": (u + offset) if u % 2 == 0 else None, "train_levels_return": 2.0 * u,
                "generalization_gap": u - offset, "test_normalized": 0.1 * u}
    runs = [load_run(write_run(tmp_path, f"plr{s}", [host_row(u, s) for u in range(1, 5)], method="plr", seed=s,
                               kind="host", env="procgen-bigfish", num_env_steps=4096 * (s + 1))) for s in (0, 1)]
    assert panel_keys(runs) == ["test_return", "train_levels_return", "generalization_gap", "test_normalized",
                                "train_return", "sampler/mean_score"]
    (group,) = group_runs(runs)
    x, _, mean = group_series(group, "test_return")
    np.testing.assert_allclose(x, [2048, 4096])
    np.testing.assert_allclose(mean, [2.5, 4.5])
