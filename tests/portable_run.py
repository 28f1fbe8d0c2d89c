"""The checked-in run of `tests/data/portable_run/` (issue 58: runs move between versions).

A tiny robust PLR run killed after its checkpoint at update 2, written by the floor leg's versions (Python
3.11 and the lowest jax, flax, optax, orbax we declare; its `config.json` records them under `versions`),
beside `expected.json`: the log row of update 3 from the same run left to finish. `tests/test_portable_run.py`
resumes the checked-in run with today's versions, on every leg of CI, and compares its update 3 with that row.

    python tests/portable_run.py     # rewrite tests/data/portable_run (on the floor leg's environment)

The programs are compiled as the suite compiles them (`tests/conftest.py`'s XLA flags), so that on the
floor leg the resumed run computes the recorded row up to the CPU's rounding.
"""

from __future__ import annotations

import json
import shutil
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
DATA = HERE / "data" / "portable_run"

OPTIONS = dict(method="plr", maze_height=5, maze_width=5, n_walls=3, max_episode_steps=32, n_actions=3,
               recurrent_size=16, num_envs=8, num_steps=16, n_epochs=2, lr=3e-3, buffer_size=16, num_updates=3,
               log_every=1, eval_every=0, checkpoint_every=2, progress=False, run_name="portable")
"""The run: robust PLR (a buffer, a replay coin and the update unit in the state), 3 PPO updates."""

TIMING = ("time_s", "sps")


def write(out: Path = DATA) -> None:
    sys.path.insert(0, str(HERE))
    import conftest  # noqa: F401, PLC0415 (the suite's XLA flags, before JAX starts its backend)

    from minimax.config import TrainConfig  # noqa: PLC0415
    from minimax.training.loop import train  # noqa: PLC0415
    from minimax.training.run_logs import read_rows  # noqa: PLC0415

    with tempfile.TemporaryDirectory() as tmp:
        whole = TrainConfig.from_options(**OPTIONS, out_dir=tmp)
        train(whole)
        rows = read_rows(whole.run_dir)
        killed = TrainConfig.from_options(**{**OPTIONS, "num_updates": 2, "run_name": "killed"}, out_dir=tmp)
        train(killed)
        shutil.rmtree(out, ignore_errors=True)
        shutil.copytree(killed.run_dir, out, ignore=shutil.ignore_patterns("*.lock", "wandb"))
    row = next(r for r in rows if r["update"] == 3)
    (out / "expected.json").write_text(json.dumps({k: v for k, v in row.items() if k not in TIMING}, indent=1))


if __name__ == "__main__":
    write()
    print(f"wrote {DATA}")
