"""Run logs: one JSON object per line and the same rows as CSV, plus W&B when asked.

Columns are fixed when the run starts (every metric the runner and evaluator report),
so the CSV has one header and evaluation columns are blank on rows without an
evaluation. On resume, rows past the restored checkpoint are dropped: the resumed
run writes them again, identically, so the log never holds duplicates. That rewrite
goes through a temporary file and a rename, so a crash during it loses nothing.

"No data" and "not a number" are told apart: a statistic nothing measured in a chunk (no
episode finished, no gradient update) is JSON `null` (blank in the CSV); a NaN or infinite
value is the string `"nan"`, `"inf"` or `"-inf"` (the same words in the CSV), which
`read_rows` turns back into floats.
"""

from __future__ import annotations

import csv
import io
import json
import math
import netrc
import os
import secrets
from pathlib import Path

from minimax.core.files import write_atomically  # noqa: F401  (re-exported)
from minimax.core.metrics import RUN_TOTALS, summarize


NONFINITE = {"nan": math.nan, "inf": math.inf, "-inf": -math.inf}


def _clean(v):
    if isinstance(v, float) and not math.isfinite(v):
        return "nan" if v != v else ("inf" if v > 0 else "-inf")
    return v


def parse_row(row: dict) -> dict:
    """A logged row with its non-finite markers as floats again."""
    return {k: NONFINITE[v] if isinstance(v, str) and v in NONFINITE else v for k, v in row.items()}


class RunLogger:
    def __init__(self, run_dir, columns: list[str], *, wandb_config: dict | None = None,
                 wandb_project: str = "minimax", run_name: str = "", resume: bool = False):
        self.run_dir = Path(run_dir)
        self.columns = list(columns)
        self.jsonl_path = self.run_dir / "metrics.jsonl"
        self.csv_path = self.run_dir / "metrics.csv"
        self._wandb = None
        if wandb_config is not None:
            self._wandb = _start_wandb(self.run_dir, wandb_project, run_name, wandb_config, resume)

    def truncate_after(self, update: int) -> None:
        """Drop rows logged after `update` (a run killed after its last checkpoint logged them)."""
        if self.jsonl_path.exists():
            rows = []
            for line in self.jsonl_path.read_text().splitlines():
                try:
                    rows.append(json.loads(line))
                except json.JSONDecodeError:  # a partial last line of a run killed mid-write
                    continue
            rows = [r for r in rows if r.get("update", 0) <= update]
            write_atomically(self.jsonl_path, "".join(json.dumps(r) + "\n" for r in rows))
            buffer = io.StringIO()
            self._write_csv_to(buffer, rows, header=True)
            write_atomically(self.csv_path, buffer.getvalue())

    def log(self, row: dict) -> None:
        row = {k: _clean(v) for k, v in row.items()}
        with self.jsonl_path.open("a") as f:
            f.write(json.dumps(row) + "\n")
        self._write_csv([row], mode="a")
        if self._wandb is not None:
            self._wandb.log({k: v for k, v in parse_row(row).items() if v is not None}, step=int(row["update"]))

    def log_rows(self, rows: list[dict]) -> None:
        """Several rows of one log step (one per seed, then their mean: `seed` is `"mean"`).
        W&B gets one entry: the mean row's values as they are, each seed's under `seed<s>/`."""
        if len(rows) == 1:
            return self.log(rows[0])
        rows = [{k: _clean(v) for k, v in row.items()} for row in rows]
        with self.jsonl_path.open("a") as f:
            f.writelines(json.dumps(row) + "\n" for row in rows)
        self._write_csv(rows, mode="a")
        if self._wandb is not None:
            entry = {}
            for row in rows:
                prefix = "" if row.get("seed") == "mean" else f"seed{row.get('seed')}/"
                entry.update({prefix + k: v for k, v in parse_row(row).items() if v is not None and k != "seed"})
            self._wandb.log(entry, step=int(rows[0]["update"]))

    def _write_csv(self, rows, mode):
        new_file = mode == "w" or not self.csv_path.exists()
        with self.csv_path.open(mode, newline="") as f:
            self._write_csv_to(f, rows, header=new_file)

    def _write_csv_to(self, f, rows, header: bool) -> None:
        writer = csv.DictWriter(f, fieldnames=self.columns, extrasaction="ignore", restval="")
        if header:
            writer.writeheader()
        writer.writerows([{k: ("" if v is None else v) for k, v in r.items()} for r in rows])

    def close(self) -> None:
        if self._wandb is not None:
            self._wandb.finish()


def read_rows(run_dir) -> list[dict]:
    path = Path(run_dir) / "metrics.jsonl"
    if not path.exists():
        return []
    return [parse_row(json.loads(line)) for line in path.read_text().splitlines() if line.strip()]


def _logged_in() -> bool:
    if os.environ.get("WANDB_API_KEY"):
        return True
    try:
        return netrc.netrc().authenticators("api.wandb.ai") is not None
    except (FileNotFoundError, netrc.NetrcParseError):
        return False


def _start_wandb(run_dir: Path, project: str, run_name: str, config: dict, resume: bool):
    """W&B run: online only with a login, else offline; no system metadata, code, git or env capture."""
    import wandb  # noqa: PLC0415 (optional at runtime: imported only when asked for)

    id_file = run_dir / "wandb_id.txt"
    if resume and id_file.exists():
        run_id = id_file.read_text().strip()
    else:
        run_id = secrets.token_hex(4)
        id_file.write_text(run_id + "\n")
    settings = wandb.Settings(x_disable_stats=True, x_disable_meta=True, x_disable_machine_info=True,
                              save_code=False, disable_git=True, disable_code=True, disable_job_creation=True,
                              console="off")
    return wandb.init(project=project, name=run_name, id=run_id, resume="allow", dir=str(run_dir),
                      config=config, mode="online" if _logged_in() else "offline", settings=settings)


# --------------------------------------------------------------------------- rows of a chunk


def seed_rows(metrics: dict, layout) -> list[dict]:
    """A chunk's metrics (host copies) -> one summarized row per seed (`layout`: `devices.DeviceLayout`)."""
    if not layout.multi_seed:
        return [summarize(metrics)]
    return [summarize({k: v[i] for k, v in metrics.items()}) for i in range(len(layout.seeds))]


def log_rows(rows: list[dict], layout, update: int, counters: dict, seconds: float) -> list[dict]:
    """A chunk's per-seed rows with the run's totals (`counters`, advanced in place) and its
    timing: the whole program's steps per second."""
    for k in RUN_TOTALS:
        counters[k] += [r[k] for r in rows]
    sps = sum(r["env_steps"] for r in rows) / seconds
    return [{**({"seed": s} if layout.multi_seed else {}), "update": update,
             **{k: int(counters[k][i]) for k in RUN_TOTALS}, "time_s": seconds, "sps": sps,
             **{k: v for k, v in r.items() if k not in RUN_TOTALS}}
            for i, (s, r) in enumerate(zip(layout.seeds, rows))]
