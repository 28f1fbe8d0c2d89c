"""Runs move between versions (issue 58): the checked-in run of `tests/data/portable_run/`, written by the floor
leg's versions (`tests/portable_run.py`), resumes under whatever versions this leg has and computes the update
the original run computed next."""

import json
import math
import shutil

import pytest

from portable_run import DATA, TIMING

from minimax.cli.train import main
from minimax.training.run_logs import read_rows

pytestmark = pytest.mark.e2e  # tests/conftest.py's tiers: the command line, faults, jobs, processes


def test_a_run_written_by_the_floor_versions_resumes_here_with_the_same_next_update(tmp_path):
    saved = json.loads((DATA / "config.json").read_text())["versions"]
    run = tmp_path / "portable"
    shutil.copytree(DATA, run, ignore=shutil.ignore_patterns("expected.json"))
    main(["--resume", "--out-dir", str(tmp_path), "--run-name", "portable", "--num-updates", "3"])
    rows = read_rows(run)
    assert [r["update"] for r in rows] == [1, 2, 3]  # the logs kept, one update added
    got = {k: v for k, v in rows[-1].items() if k not in TIMING}
    want = json.loads((DATA / "expected.json").read_text())
    assert set(got) == set(want)
    wrong = {}
    for key, expected in want.items():
        value = got[key]
        if expected is None or value is None:
            ok = expected is value
        else:  # rounding of another CPU or another XLA: relative to the quantity, absolute near zero
            ok = math.isclose(value, expected, rel_tol=1e-3, abs_tol=1e-5)
        if not ok:
            wrong[key] = (value, expected)
    assert not wrong, f"resumed with {json.loads((run / 'config.json').read_text())['versions']}, written with {saved}: {wrong}"
