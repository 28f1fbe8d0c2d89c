"""`reproduce`'s bookkeeping: `<out-dir>/state.json` (wall times, sessions, hardware, evaluations per method)."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

from minimax.core.files import write_atomically
from minimax.core.versions import cpu_model


class ReproduceError(RuntimeError):
    """Bad input to the reproduce command, or an output directory it cannot continue."""


class State:
    """`<out-dir>/state.json`: per method, training and evaluation wall times and sessions,
    the hardware each ran on, and each seed's evaluation. Written atomically."""

    def __init__(self, path: Path):
        self.path = path
        self.data = {"version": 1, "methods": {}}
        if path.exists():
            try:
                self.data = json.loads(path.read_text())
            except (OSError, json.JSONDecodeError) as e:
                raise ReproduceError(f"cannot read {path}: {e} (delete it to start the bookkeeping afresh)") from None

    def method(self, name: str) -> dict:
        return self.data["methods"].setdefault(name, {"train_seconds": 0.0, "train_sessions": 0, "hardware": []})

    def reset(self, name: str) -> dict:
        self.data["methods"].pop(name, None)
        return self.method(name)

    def save(self) -> None:
        write_atomically(self.path, json.dumps(self.data, indent=2) + "\n")


def hardware() -> dict:
    import jax  # noqa: PLC0415

    devices = jax.devices()
    return {"platform": devices[0].platform, "device_kind": devices[0].device_kind, "device_count": len(devices),
            "cpu": cpu_model(), "cpu_count": os.cpu_count()}


def note_hardware(entry: dict, where: str, hw: dict) -> None:
    record = {"stage": where, **hw}
    if record not in entry["hardware"]:
        entry["hardware"].append(record)




def job_hardware(session: dict) -> dict:
    """`hardware()`'s record of one job session (`minimax.cli.cluster.TrainJob`): its backend as the run's
    config.json recorded it (`cpu (1 x cpu)`), its host's CPU."""
    match = re.fullmatch(r"(\S+) \((\d+) x (.+)\)", session.get("backend") or "")
    platform_, count, kind = match.groups() if match else ("unknown", "0", "unknown")
    return {"platform": platform_, "device_kind": kind, "device_count": int(count), "cpu": session.get("cpu", "?"),
            "cpu_count": session.get("cpu_count")}
