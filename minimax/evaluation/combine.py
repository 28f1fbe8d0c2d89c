"""One table from several `evaluate.py` calls: their groups side by side, with rliable's aggregates and the
probability of improvement between every two groups, as one call over all the runs would give them.

Why: a comparison's runs often finish sessions apart, and evaluating the early ones again costs as much as
the first time. An evaluation is deterministic (same checkpoints, same settings, same key: the same numbers
to the digit), and each aggregate reads only its own groups' per-run scores with the bootstrap's fixed seed,
so the combined table is the one-call table. The combination checks what that rests on: the calls' settings
(every option that changes a score, a level or an interval) must agree, and a group present in two calls
must hold the same scores in both, or it is refused in one line naming the difference.
"""

from __future__ import annotations

import json
from pathlib import Path

from minimax.evaluation.aggregates import aggregate_results, print_aggregates, write_aggregates
from minimax.evaluation.report import write_results

UNSCORED_SETTINGS = ("runs", "out", "gif")
"""Settings an evaluation's numbers do not depend on: the rest must agree between combined calls."""


class CombineError(ValueError):
    """Evaluations that cannot be combined (one line, naming the evaluation and the difference)."""


def load_evaluation(path) -> dict:
    """An evaluation's `results.json` (`path`: the file or its directory)."""
    path = Path(path)
    path = path / "results.json" if path.is_dir() else path
    if not path.is_file():
        raise CombineError(f"{path}: no results.json (the output directory of an evaluate.py call)")
    doc = json.loads(path.read_text())
    if not {"settings", "runs", "groups"} <= set(doc):
        raise CombineError(f"{path}: not an evaluate.py results.json (no settings, runs or groups)")
    if not all("members" in g for g in doc["groups"]) or not all("mazes" in r for r in doc["runs"]):
        raise CombineError(f"{path}: an evaluation of host-environment runs (procgen, gym): only evaluations "
                           f"on held-out levels combine")
    return doc | {"path": str(path)}


def _check_settings(docs: list[dict]) -> dict:
    first = docs[0]
    scored = {k: v for k, v in first["settings"].items() if k not in UNSCORED_SETTINGS}
    for doc in docs[1:]:
        other = {k: v for k, v in doc["settings"].items() if k not in UNSCORED_SETTINGS}
        differ = sorted(k for k in scored.keys() | other.keys() if scored.get(k) != other.get(k))
        if differ:
            k = differ[0]
            raise CombineError(f"{doc['path']} was scored with {k}={other.get(k)!r}, {first['path']} with "
                               f"{k}={scored.get(k)!r}: evaluations combine only under the same settings")
    return scored


def combine_evaluations(paths, out_dir) -> dict:
    """Combine the evaluations at `paths` into `out_dir` (results.json, the CSVs, aggregates.csv); returns
    what results.json holds. A group (experiment label) found in several keeps its first copy, after checking
    that every copy scored the same runs the same."""
    docs = [load_evaluation(p) for p in paths]
    if len(docs) < 2:
        raise CombineError("give at least two evaluations to combine")
    settings = _check_settings(docs)
    results, groups, seen = [], [], {}
    for doc in docs:
        for group in doc["groups"]:
            members = [doc["runs"][i] for i in group["members"]]
            label = group["label"]
            if label in seen:
                earlier, where = seen[label]
                if members != earlier:
                    raise CombineError(f"group {label!r} differs between {where} and {doc['path']}: a group in "
                                       f"two calls must be the same runs and checkpoints with the same scores")
                continue
            seen[label] = (members, doc["path"])
            groups.append(group | {"members": list(range(len(results), len(results) + len(members)))})
            results.extend(members)
    level_names = list(results[0]["mazes"])
    if any(list(r["mazes"]) != level_names for r in results):
        raise CombineError("the evaluations scored different held-out levels")
    agg = aggregate_results(groups, results, level_names, settings["bootstrap_reps"], settings["seed"])
    out_dir = Path(out_dir)
    runs = [run for doc in docs for run in doc["settings"]["runs"]]
    write_results(out_dir, results, groups,
                  settings | {"runs": list(dict.fromkeys(runs)), "out": str(out_dir),
                              "combined_from": [doc["path"] for doc in docs]},
                  {"aggregates": agg} if agg else {})
    if agg:
        write_aggregates(out_dir, agg)
        print_aggregates(agg)
    return json.loads((out_dir / "results.json").read_text())
