"""benchmarks/gpu_suite.py runs on CPU at toy sizes: a PLR-family row (every seed's buffer warmed,
then timed) and its plan of rows."""

from __future__ import annotations

import importlib.util
from pathlib import Path

spec = importlib.util.spec_from_file_location("gpu_suite", Path(__file__).resolve().parents[1] / "benchmarks" /
                                              "gpu_suite.py")
suite = importlib.util.module_from_spec(spec)
spec.loader.exec_module(suite)


def test_the_plan_covers_every_table_2_method_at_1_and_10_seeds_and_the_sweeps():
    items = suite.plan(tiny=False)
    assert {(p, s) for sec, p, s, _ in items if sec == "method"} == {(p, s) for p in suite.TABLE_2 for s in (1, 10)}
    assert [s for sec, *_, s in items if sec == "unroll"] == [1, 4, 16]


def test_a_plr_row_measures_the_steady_state_of_two_seeds():
    row = suite.measure("plr", seeds=2, unroll=2, chunk=1, repeats=1, overrides=suite.TINY)
    assert row["s_per_update"] > 0 and row["compile_s"] > 0 and row["cycles_per_update"] >= 1
