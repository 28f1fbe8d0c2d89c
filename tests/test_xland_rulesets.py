"""XLand-MiniGrid's benchmark rulesets generated here (issue 73, `envs/xland/rulesets.py`): row for row the
authors' `scripts/ruleset_generator.py` for the same arguments and seed, in both samplings (`v2`, whose
duplicate rejection is inverted, and `v3`), read from a recording of their script's output (re-recorded
with `XLAND_MINIGRID_REPO=<git dir> python tests/record_references.py xland_rulesets`) and, in the reference
tier, run live from a snapshot of their repository."""

from __future__ import annotations

import bz2
import os
import pickle
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import pytest

from minimax.envs.xland import rulesets
from reference_outputs import load

REFERENCE = Path(os.environ.get("XLAND_MINIGRID_REPO", "/work/.mirror/dunnolab+xland-minigrid/repo"))
COMMITS = {"v2": "af7a54112ee6c1d54df65e5c7f95fa37e70e060b",   # the last generator before the fix (Aug 2024)
           "v3": "b08e886eaa32ef5a342881f9b84d9401497fc105"}   # "re-sampled benchmarks without duplicates"
CASES = (("v2", "trivial", 400), ("v3", "trivial", 400), ("v2", "high", 150), ("v3", "small", 150),
         ("v3", "medium", 150), ("v3", "high", 150))
"""(version, kind, count): trivial's 21,410 possible goals collide about 4 times in 400 draws, which is where
the versions differ; the deeper kinds' draws cover every goal and rule kind and the pruning."""
FIELDS = ("goals", "rules", "init_tiles", "num_rules")


def their_commits() -> dict | None:
    """The snapshot's commits of the two generators, or None where there is no snapshot."""
    try:
        for commit in COMMITS.values():
            subprocess.run(["git", "-C", str(REFERENCE), "cat-file", "-e", commit], check=True, capture_output=True,
                           timeout=60)
    except (OSError, subprocess.SubprocessError):
        return None
    return dict(COMMITS)


def their_rulesets(version: str, kind: str, count: int) -> dict[str, np.ndarray]:
    """The authors' script at `version`'s commit, run with `generate_benchmarks.sh`'s arguments for `kind`."""
    config = rulesets.KINDS[kind]
    script = subprocess.run(["git", "-C", str(REFERENCE), "show", f"{COMMITS[version]}:scripts/ruleset_generator.py"],
                            capture_output=True, text=True, check=True, timeout=60).stdout
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "ruleset_generator.py"
        path.write_text(script)
        flags = [f"--chain_depth={config.chain_depth}", f"--num_distractor_rules={config.num_distractor_rules}",
                 f"--num_distractor_objects={config.num_distractor_objects}", f"--prune_prob={config.prune_prob}",
                 f"--total_rulesets={count}", f"--save_path={tmp}/out", f"--random_seed={rulesets.SEED}"]
        flags += [f"--{name}" for name in ("sample_depth", "sample_distractor_rules", "prune_chain")
                  if getattr(config, name)]
        subprocess.run([sys.executable, str(path), *flags], check=True, capture_output=True, timeout=1200)
        with bz2.open(f"{tmp}/out", "rb") as f:  # their format: a bz2 pickle of jax arrays
            written = pickle.load(f)
    return {name: np.asarray(written[name]) for name in FIELDS}


def recorded(version: str, kind: str) -> dict[str, np.ndarray]:
    arrays, _ = load("xland_rulesets")
    return {name: arrays[f"{version}_{kind}_{name}"] for name in FIELDS}


@pytest.mark.parametrize("version,kind,count", CASES)
def test_rulesets_are_the_authors_row_for_row(version, kind, count):
    ours = rulesets.generate(rulesets.KINDS[kind], count, version)
    theirs = recorded(version, kind)
    for name in FIELDS:
        assert ours[name].dtype == np.uint8
        np.testing.assert_array_equal(ours[name], theirs[name], err_msg=f"{version} {kind} {name}")


def test_v2_keeps_the_duplicates_v3_rejects():
    """The two samplings agree up to the first collision; after it v2 keeps a duplicate and v3 none."""
    v2, v3 = (rulesets.generate(rulesets.KINDS["trivial"], 400, version) for version in ("v2", "v3"))
    keys = {version: [tuple(g) + tuple(r.ravel()) for g, r in zip(b["goals"], b["rules"])]
            for version, b in (("v2", v2), ("v3", v3))}
    assert len(set(keys["v3"])) == 400
    assert len(set(keys["v2"])) < 400
    first = next(i for i in range(400) if keys["v2"][i] in keys["v2"][:i])
    assert keys["v2"][:first] == keys["v3"][:first]
    assert keys["v2"][first] != keys["v3"][first]


def test_rulesets_are_well_formed():
    """Every goal and rule kind is one xminigrid knows; rules use distinct tiles along the chain; the counts match."""
    bench = rulesets.generate(rulesets.KINDS["high"], 300, "v3")
    assert set(np.unique(bench["goals"][:, 0])) <= set(rulesets.GOAL_IDS)
    assert set(np.unique(bench["rules"][:, :, 0])) <= {0, *rulesets.RULE_IDS}
    np.testing.assert_array_equal(bench["num_rules"][:, 0], (bench["rules"][:, :, 0] != 0).sum(1))
    assert bench["rules"].shape[1] <= 2 + 4 + 8 + 4 and bench["init_tiles"].shape[2] == 2  # a depth-3 tree, 4 more


def test_unknown_benchmark_or_version_is_one_line():
    with pytest.raises(ValueError, match=r"unknown XLand benchmark version 'v9'; known: v2, v3"):
        rulesets.check_benchmark("high-3m", "v9")
    with pytest.raises(ValueError, match=r"unknown XLand benchmark 'trivial-1m' in v3; known: trivial-21k"):
        rulesets.check_benchmark("trivial-1m", "v3")
    assert rulesets.check_benchmark("high-3m", "v2") == (rulesets.KINDS["high"], 3_000_000)


@pytest.mark.reference
@pytest.mark.parametrize("version,kind,count", CASES)
def test_recording_is_the_authors_script_live(version, kind, count):
    pytest.importorskip("xminigrid")
    if their_commits() is None:
        pytest.skip(f"no snapshot of dunnolab/xland-minigrid at {REFERENCE} (set XLAND_MINIGRID_REPO)")
    theirs, saved = their_rulesets(version, kind, count), recorded(version, kind)
    for name in FIELDS:
        np.testing.assert_array_equal(theirs[name], saved[name], err_msg=f"{version} {kind} {name}")
