"""rliable's aggregate metrics (minimax/core/aggregate.py) against a transcription of rliable 1.2.0's
own (`rliable/metrics.py`, `rliable/library.py: StratifiedBootstrap`, percentile intervals)."""

import numpy as np
import pytest
import scipy.stats

from minimax.core import aggregate as ag


# ---- a transcription of rliable's functions (numpy's legacy RandomState, as it draws) -------------------

def ref_iqm(scores):
    return scipy.stats.trim_mean(scores, proportiontocut=0.25, axis=None)


def ref_mean(scores):
    return np.mean(np.mean(scores, axis=0))


def ref_median(scores):
    return np.median(np.mean(scores, axis=0))


def ref_optimality_gap(scores, gamma=1):
    return gamma - np.mean(np.minimum(scores, gamma))


def ref_poi(x, y):
    probs = []
    for task in range(x.shape[1]):
        if np.array_equal(x[:, task], y[:, task]):
            probs.append(0.5)
        else:
            u, _ = scipy.stats.mannwhitneyu(x[:, task], y[:, task], alternative="greater")
            probs.append(u / (x.shape[0] * y.shape[0]))
    return np.mean(probs)


def ref_interval(scores, fn, reps, rng):
    """StratifiedBootstrap.update_indices: a run index per (run, task) cell; conf_int 'percentile'."""
    runs, tasks = scores.shape
    stats = [fn(scores[rng.choice(runs, (runs, tasks), replace=True), np.arange(tasks)[None, :]])
             for _ in range(reps)]
    return np.percentile(stats, [2.5, 97.5])


REFS = {"iqm": ref_iqm, "mean": ref_mean, "median": ref_median, "optimality_gap": ref_optimality_gap}


def solved_rates(seed, runs=5, tasks=12):
    """Scores like ours: solved rates of 10 episodes, so in [0, 1] with many ties."""
    rng = np.random.default_rng(seed)
    skill = rng.uniform(0, 1, size=tasks)
    return rng.binomial(10, np.clip(skill + rng.normal(0, 0.15, size=(runs, tasks)), 0, 1)) / 10


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_point_estimates_are_rliables(seed):
    x, y = solved_rates(seed), solved_rates(seed + 10, runs=3)
    for name, fn in ag.AGGREGATES.items():
        assert float(fn(x)) == pytest.approx(REFS[name](x), abs=1e-12), name
    assert ag.probability_of_improvement(x, y) == pytest.approx(ref_poi(x, y), abs=1e-12)
    assert ag.probability_of_improvement(x, x) == 0.5
    assert ag.probability_of_improvement(x, y) + ag.probability_of_improvement(y, x) == pytest.approx(1.0)


def test_batched_statistics_equal_one_matrix_at_a_time():
    batch = np.stack([solved_rates(s) for s in range(4)])
    for name, fn in ag.AGGREGATES.items():
        np.testing.assert_allclose(fn(batch), [REFS[name](m) for m in batch], atol=1e-12, err_msg=name)


def test_stratified_bootstrap_intervals_agree_with_rliables():
    """Same algorithm, other random draws: the 95% intervals agree to Monte-Carlo precision."""
    scores = solved_rates(7)
    rng = np.random.RandomState(0)
    for name, fn in ag.AGGREGATES.items():
        ours = ag.interval(scores, fn, reps=4000, seed=1)
        low, high = ref_interval(scores, REFS[name], 4000, rng)
        assert ours["estimate"] == pytest.approx(REFS[name](scores))
        assert ours["ci_low"] == pytest.approx(low, abs=0.01) and ours["ci_high"] == pytest.approx(high, abs=0.01), name
        assert ours["ci_low"] <= ours["estimate"] <= ours["ci_high"]


def test_each_task_keeps_its_own_runs():
    """Stratified: a redraw mixes runs within a task, never values across tasks."""
    scores = np.array([[0.0, 1.0], [0.0, 1.0], [0.0, 1.0]])
    redrawn = ag.stratified_resample(scores, 50, np.random.default_rng(0))
    assert (redrawn[..., 0] == 0).all() and (redrawn[..., 1] == 1).all()
    constant = ag.interval(scores, ag.mean, reps=100)
    assert constant["ci_low"] == constant["estimate"] == constant["ci_high"] == 0.5


def test_improvement_interval_and_bad_input():
    better, worse = solved_rates(3) * 0.5 + 0.5, solved_rates(3) * 0.5
    p = ag.improvement_interval(better, worse, reps=500)
    assert p["estimate"] == 1.0 and p["ci_low"] == 1.0
    same = ag.improvement_interval(better, better, reps=500)
    assert same["estimate"] == 0.5 and same["ci_low"] < 0.5 < same["ci_high"]
    with pytest.raises(ValueError, match="same tasks"):
        ag.improvement_interval(better, worse[:, :3])
    with pytest.raises(ValueError, match=r"\[runs, tasks\] matrix"):
        ag.interval(np.zeros(3), ag.mean)
    with pytest.raises(ValueError, match="finite"):
        ag.interval(np.array([[0.5, np.nan]]), ag.mean)


def test_an_evaluation_plots_its_aggregates_and_performance_profiles(tmp_path, capsys):
    import json

    from minimax.evaluation.aggregate_plot import profile
    from minimax.evaluation.aggregates import aggregate_groups
    from minimax.evaluation.plot import main as plot_main

    levels = [f"L{i}" for i in range(6)]
    good, bad = solved_rates(1, runs=3, tasks=6), solved_rates(2, runs=2, tasks=6) * 0.5
    runs = [{"run": f"r{i}", "seed": 0, "mazes": {n: {"solved_rate": float(v)} for n, v in zip(levels, row)}}
            for i, row in enumerate([*good, *bad])]
    groups = [{"label": "good", "members": [0, 1, 2]}, {"label": "bad", "members": [3, 4]}]
    doc = {"runs": runs, "groups": groups, "aggregates": aggregate_groups(groups, [good, bad], reps=200)}
    (tmp_path / "results.json").write_text(json.dumps(doc))
    out = plot_main([str(tmp_path), "--out", str(tmp_path / "agg.png")])
    assert out.exists() and out.stat().st_size > 10_000 and str(out) in capsys.readouterr().out
    taus = np.array([0.0, 0.5, 0.9])
    point, low, high = profile(good, taus, reps=300)
    np.testing.assert_allclose(point, [(good > t).mean() for t in taus])
    assert (low <= point + 1e-12).all() and (point <= high + 1e-12).all()
    (tmp_path / "empty").mkdir()
    (tmp_path / "empty" / "results.json").write_text(json.dumps({"runs": runs, "groups": groups}))
    with pytest.raises(SystemExit) as stop:
        plot_main([str(tmp_path / "empty"), "--out", str(tmp_path / "x.png")])
    assert stop.value.code == 2 and "holds no aggregates" in capsys.readouterr().err


def test_nothing_is_aggregated_without_solved_rates():
    """Pendulum's episodes neither succeed nor fail: its solved rates are NaN, and there is no aggregate."""
    from minimax.evaluation.aggregates import aggregate_results

    runs = [{"mazes": {"a": {"solved_rate": float("nan")}, "b": {"solved_rate": float("nan")}}}] * 2
    groups = [{"label": "x", "members": [0, 1]}]
    assert aggregate_results(groups, runs, ["a", "b"]) is None and aggregate_results(groups, runs, []) is None
    runs = [{"mazes": {"a": {"solved_rate": 0.5}, "b": {"solved_rate": 1.0}}}] * 2
    assert aggregate_results(groups, runs, ["a", "b"], reps=50)["groups"]["x"]["mean"]["estimate"] == 0.75
