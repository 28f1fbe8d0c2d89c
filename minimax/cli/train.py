"""`python train.py` / `minimax-train`: which training path a run takes.

`--env procgen-<game>` and `--env gym-<id>` (or `--resume` of such a run) step their environment on
the host (`minimax.host.loop`); every other environment is compiled whole (`minimax.training.cli`).
Both take the same option names for the same ideas (`docs/host_envs.md`).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

HOST_ENV_PREFIXES = ("procgen-", "gym-")
"""`--env` names of environments stepped on the host."""


def is_host_env_run(argv: list[str]) -> bool:
    """`--env procgen-<game>` / `gym-<id>` (or `--resume` of such a run): the host-environment loop."""
    pre = argparse.ArgumentParser(add_help=False)
    for name in ("env", "out-dir", "run-name"):
        pre.add_argument(f"--{name}")
    known, _ = pre.parse_known_args(argv)
    if known.env is not None:
        return known.env.startswith(HOST_ENV_PREFIXES)
    if known.run_name is not None:
        from minimax.host.config import is_host_config  # noqa: PLC0415

        return is_host_config(Path(known.out_dir or "runs") / known.run_name / "config.json")
    return False


def main(argv: list[str] | None = None) -> None:
    """Train from the command line: the host-environment loop or the compiled one."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if is_host_env_run(argv):
        from minimax.host.loop import main as host_main  # noqa: PLC0415  (procgen loads only when asked for)

        return host_main(argv)
    from minimax.training.devices import DeviceError, join_hosts  # noqa: PLC0415

    try:
        join_hosts(argv)  # multi-host runs: before anything starts JAX's backend
    except DeviceError as e:
        print(f"error: {e}", file=sys.stderr)
        raise SystemExit(2) from None
    from minimax.training.cli import main as jax_main  # noqa: PLC0415

    return jax_main(argv)


if __name__ == "__main__":
    main()
