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


@pytest.mark.e2e  # tests/conftest.py's tiers: a run resumed from the command line
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


@pytest.mark.contract  # a runner is built and its state traced (no program compiled): a few seconds
def test_the_checked_in_checkpoint_restores_into_the_state_this_version_builds():
    """The structure check of the test above without its run, in the default tiers: a field added to a method's
    state (even one that is None by default: Orbax refuses a target with a key the checkpoint lacks) must not
    make earlier checkpoints unrestorable. (`PLRState.trial` did, until it moved to `PLRTrialState`.)"""
    import jax

    from minimax.config import TrainConfig
    from minimax.training.builder import build_runner
    from minimax.training.checkpoint import Checkpointer

    cfg = TrainConfig.load(DATA / "config.json")
    abstract = jax.eval_shape(build_runner(cfg).init, jax.random.key(0))
    state, meta = Checkpointer(DATA / "checkpoints").restore(abstract, 2)
    assert jax.tree.structure(state) == jax.tree.structure(abstract) and meta
