"""benchmarks/gpu_suite.py runs on CPU at toy sizes: a PLR-family row (every seed's buffer warmed,
then timed) and its plan of rows."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

pytestmark = pytest.mark.e2e  # tests/conftest.py's tiers: the command line, faults, jobs, processes

spec = importlib.util.spec_from_file_location("gpu_suite", Path(__file__).resolve().parents[1] / "benchmarks" /
                                              "gpu_suite.py")
suite = importlib.util.module_from_spec(spec)
spec.loader.exec_module(suite)


def test_the_plan_covers_every_table_2_method_at_1_and_10_seeds_and_the_sweeps():
    items = suite.plan(tiny=False)
    assert {(p, s) for sec, p, s, _ in items if sec == "method"} == {(p, s) for p in suite.TABLE_2 for s in (1, 10)}
    assert [s for sec, *_, s in items if sec == "unroll"] == [1, 4, 16]


def test_chosen_rows_are_parsed_and_a_bad_one_is_named():
    assert suite.parse_rows("dr:1:1, paired:10:8,") == [("rows", "dr", 1, 1), ("rows", "paired", 10, 8)]
    for bad in ("dr:1", "nope:1:1", "dr:0:1", "dr:1:x"):
        with pytest.raises(SystemExit, match=repr(bad)):
            suite.parse_rows(bad)


def test_size_overrides_are_parsed_and_a_bad_one_is_named():
    assert suite.parse_set(["num_steps=64", "lr=3e-4", "recurrent_cell=gru"]) == \
        {"num_steps": 64, "lr": 3e-4, "recurrent_cell": "gru"}
    for bad in ("num_steps", "no_such_option=1"):
        with pytest.raises(SystemExit, match=repr(bad)):
            suite.parse_set([bad])


def test_the_table_2_hours_are_projected_from_chosen_rows_too(monkeypatch, capsys):
    """Six 10-seed rows given with --rows (how a short lease runs them) project the hours as the plan does;
    five do not, and neither do rows at another unroll."""
    seconds = dict(zip(suite.TABLE_2, (0.1, 0.2, 0.3, 0.1, 0.2, 0.3)))
    monkeypatch.setattr(suite, "measure", lambda preset, *a, **k: {
        "compile_s": 1.0, "s_per_update": seconds[preset], "cycles_per_update": 1.0})
    suite.main(["--rows", ",".join(f"{p}:10:0" for p in suite.TABLE_2) + ",dr:1:0"])
    assert "Projected full Table 2 (6 methods x 10 seeds x 30,000 PPO updates, one program per method): " \
           "10.00 device-hours" in capsys.readouterr().out
    suite.main(["--rows", ",".join(f"{p}:10:0" for p in suite.TABLE_2[:5]) + ",paccel:10:8"])
    assert "Projected" not in capsys.readouterr().out


@pytest.mark.e2e  # over 20 s here (the default run leaves it out; --slow runs it)
def test_a_plr_row_measures_the_steady_state_of_two_seeds():
    row = suite.measure("plr", seeds=2, unroll=2, chunk=1, repeats=1, overrides=suite.TINY)
    assert row["s_per_update"] > 0 and row["compile_s"] > 0 and row["cycles_per_update"] >= 1


profiler_spec = importlib.util.spec_from_file_location("gpu_profile", Path(__file__).resolve().parents[1] /
                                                       "benchmarks" / "gpu_profile.py")
gpu_profile = importlib.util.module_from_spec(profiler_spec)
profiler_spec.loader.exec_module(gpu_profile)


def test_self_time_leaves_out_nested_ops_and_busy_time_is_the_union():
    # A while loop (0-100) around two ops (10-30, 40-50), then an op on another stream overlapping it (90-120).
    line = [("while.1", 0, 100), ("fusion.2", 10, 20), ("dot.3", 40, 10)]
    assert dict(gpu_profile.self_times(line)) == {"while.1": 70, "fusion.2": 20, "dot.3": 10}
    assert gpu_profile.busy_ns([line, [("copy.4", 90, 30)]]) == 120
    assert [gpu_profile.kind(n) for n in ("loop_add_fusion.12", "cutlass_80_tensorop_s1688gemm", "copy.4")] == [
        "fusion", "gemm", "copy"]


@pytest.mark.e2e  # over 20 s here (the default run leaves it out; --slow runs it)
def test_the_profiler_reads_its_trace_back_on_cpu(tmp_path):
    r = gpu_profile.profile("dr", seeds=2, unroll=0, chunk=1, repeats=1, overrides=suite.TINY,
                            trace_dir=str(tmp_path))
    assert r["events"] > r["env_steps_per_rollout"]  # at least one op per env step of the rollout
    assert 0 < r["busy_s"] <= r["wall_s"] * 1.5 and r["by_kind"].get("fusion", 0) > 0
    assert r["top"] and Path(r["trace"]).exists()
    # The op events are attributed to parts of the update (the named scopes and autodiff's names; a few
    # runtime events, e.g. "Transpose" without fusion emitters, name no HLO op), and the rollout's parts
    # run once per env step at least.
    parts = r["parts"]
    assert parts.get("unattributed", (0, 0))[0] <= 0.05 * r["events"]
    assert parts["PPO backward"][0] > 0 and parts["PPO forward"][0] > 0
    for part in ("rollout: policy forward", "rollout: env step", "rollout: sampling"):
        assert parts[part][0] >= r["env_steps_per_rollout"], part


HLO = """
%body (p: (s32[], f32[4])) -> (s32[], f32[4]) {
  %p = (s32[], f32[4]) parameter(0)
  %copy.7 = f32[4]{0} copy(%gte.1)
  ROOT %fusion.3 = f32[4]{0} fusion(%copy.7), kind=kLoop, metadata={op_name="jit(f)/rollout/while/body/env_step/add"}
}

ENTRY %main (a: f32[4]) -> f32[4] {
  %while.2 = (s32[], f32[4]) while(%t), condition=%cond, body=%body, metadata={op_name="jit(f)/rollout/while"}
  %fusion.9 = f32[4]{0} fusion(%x), kind=kLoop, metadata={op_name="jit(f)/transpose(jvp(Net))/core/mul"}
  ROOT %fusion.10 = f32[4]{0} fusion(%x), kind=kLoop, metadata={op_name="jit(f)/jvp(Net)/core/mul"}
}
"""


def test_ops_are_attributed_by_name_scope_and_a_loops_copies_to_the_loop():
    parts = gpu_profile.op_parts(HLO)
    assert parts["fusion_3"] == "rollout: env step" and parts["copy_7"] == "rollout: other"
    assert parts["fusion_9"] == "PPO backward" and parts["fusion_10"] == "PPO forward"
    table = gpu_profile.part_table([("fusion.3", 10), ("copy.7", 5), ("fusion_9", 20), ("nope.1", 1)], parts, 1)
    assert table["rollout: env step"] == (1, 1e-8) and table["PPO backward"] == (1, 2e-8)
    assert table["unattributed"] == (1, 1e-9)


ab_spec = importlib.util.spec_from_file_location("ab_update", Path(__file__).resolve().parents[1] / "benchmarks" /
                                                 "ab_update.py")
ab_update = importlib.util.module_from_spec(ab_spec)
ab_spec.loader.exec_module(ab_update)


def test_the_ab_benchmark_exports_a_revision_as_a_package_that_loads_beside_minimax(tmp_path):
    import subprocess  # noqa: PLC0415
    import sys  # noqa: PLC0415

    out = ab_update.export_before("HEAD", tmp_path)
    package = out / "minimax_before"
    sources = [p.read_text() for p in package.rglob("*.py")]
    assert sources and not any("from minimax." in s or "import minimax\n" in s for s in sources)
    probe = ("import sys; sys.path.insert(0, sys.argv[1]); import minimax, minimax_before.agents.distributions as d; "
             "assert d.__file__.startswith(sys.argv[1]) and minimax.__file__ != d.__file__")
    done = subprocess.run([sys.executable, "-c", probe, str(out)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-1500:]


census_spec = importlib.util.spec_from_file_location("hlo_census", Path(__file__).resolve().parents[1] /
                                                     "benchmarks" / "hlo_census.py")
hlo_census = importlib.util.module_from_spec(census_spec)
census_spec.loader.exec_module(hlo_census)


def test_the_hlo_census_multiplies_a_loops_body_by_its_trip_count():
    """A scan of 16 steps holding a scan of 3, then a loop whose count depends on the data: 16 + 48 known
    iterations, the inner scan's kernels counted 48 times, the data-dependent loop's body once, apart."""
    import jax
    import jax.numpy as jnp

    def program(x):
        def outer(c, _):
            c, _ = jax.lax.scan(lambda d, _: (jnp.sin(d) @ d, None), c, None, length=3)
            return c, None
        y, _ = jax.lax.scan(outer, x, None, length=16)
        return jax.lax.while_loop(lambda c: c.sum() < 100.0, lambda c: c @ c + 1.0, y)

    text = jax.jit(program).lower(jnp.ones((8, 8))).compile().as_text()
    counts = hlo_census.census(text)
    assert counts["loops"] == 1 + 16 + 1 and counts["iterations"] == 16 + 16 * 3
    assert counts["loops of unknown count"] == 1 and counts["dynamic kernels"] >= 1
    assert counts["kernels"] >= 48  # at least one kernel (the matmul) per inner step
