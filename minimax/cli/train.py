"""`python train.py` / `minimax-train`: which training path a run takes.

`--env procgen-<game>` and `--env gym-<id>` (or `--resume` of such a run) step their environment on
the host (`minimax.host.loop`); every other environment is compiled whole (`minimax.training.cli`).
Both take the same option names for the same ideas (`docs/host_envs.md`).
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import sys
from pathlib import Path

from minimax.core.options import ConfigError
from minimax.training.stop_signals import early_stops

HOST_ENV_PREFIXES = ("procgen-", "gym-")
"""`--env` names of environments stepped on the host."""


@dataclasses.dataclass(frozen=True)
class Routing:
    """What `train.py` must know before a config parser sees the command line, read in one pass
    (`route`): which path the run takes and whether it joins other hosts first."""

    host: bool
    """`--env procgen-<game>` / `gym-<id>` (or `--resume` of such a run): the host-environment loop."""
    coordinator_address: str = ""
    num_processes: int = 0
    process_id: int = -1


def route(argv: list[str]) -> Routing:
    """The command line's routing flags (`Routing`), the one parse before the chosen path's config parser."""
    pre = argparse.ArgumentParser(add_help=False, allow_abbrev=False)
    for name in ("env", "out-dir", "run-name", "coordinator-address", "num-processes", "process-id"):
        pre.add_argument(f"--{name}")
    known, _ = pre.parse_known_args(argv)
    host = False
    if known.env is not None:
        host = known.env.startswith(HOST_ENV_PREFIXES)
    elif known.run_name is not None:
        from minimax.host.config import is_host_config  # noqa: PLC0415

        host = is_host_config(Path(known.out_dir or "runs") / known.run_name / "config.json")
    return Routing(host, known.coordinator_address or "", _integer("--num-processes", known.num_processes, 0),
                   _integer("--process-id", known.process_id, -1))


def _integer(flag: str, text: str | None, default: int) -> int:
    """A routing number (`default` where absent); one that is not a number is a `ConfigError` naming the flag."""
    try:
        return int(text) if text is not None else default
    except ValueError:
        raise ConfigError(f"{flag} takes an integer, got {text!r}") from None


def is_host_env_run(argv: list[str]) -> bool:
    """Whether `argv` trains on a host environment (`route(argv).host`)."""
    return route(argv).host


def load_plugins(argv: list[str]) -> list[str]:
    """Import every `--plugin MODULE_OR_FILE.py` (a user's method, score or environment registers itself on
    import) and return `argv` without them (`config/plugins.py: load_all`; a run remembers them)."""
    from minimax.config.plugins import load_all  # noqa: PLC0415

    return load_all(argv)


def main(argv: list[str] | None = None) -> None:
    """Train from the command line: the host-environment loop or the compiled one (`--version`: the versions
    of minimax, Python, jax and its libraries, and the backend, then nothing else). `--plugin MODULE`
    (or a `.py` file; repeatable) imports a user's registrations first: `--method`, `--score-function`
    and `--env` then accept what it registered; the run's `config.json` records it, so `--resume` imports it
    again by itself (`config/plugins.py`)."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if "--version" in argv:
        from minimax.core.versions import version_text  # noqa: PLC0415

        print(version_text())
        return None
    with early_stops():  # a cluster's stop while this process starts is saved, not fatal (stop_signals.py)
        return _train(argv)


def _train(argv: list[str]) -> None:
    """`main` after `--version`: plugins, then the host path or the compiled one."""
    argv = load_plugins(argv)
    compile_cache = "--no-compile-cache" not in argv  # a setting of this process, not of the run
    argv = [a for a in argv if a != "--no-compile-cache"]
    if compile_cache:  # before JAX starts its backend (`programs.enable_compile_cache` says why)
        os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    try:
        routing = route(argv)
    except ConfigError as e:
        print(f"error: {e}", file=sys.stderr)
        raise SystemExit(2) from None
    if routing.host:
        from minimax.host.loop import main as host_main  # noqa: PLC0415  (procgen loads only when asked for)

        return host_main(argv)
    from minimax.training.devices import DeviceError, initialize_distributed  # noqa: PLC0415

    try:  # multi-host runs join before anything starts JAX's backend (building a config's presets does)
        initialize_distributed(routing.coordinator_address, routing.num_processes, routing.process_id)
    except DeviceError as e:
        print(f"error: {e}", file=sys.stderr)
        raise SystemExit(2) from None
    from minimax.training.cli import main as jax_main  # noqa: PLC0415
    from minimax.training.programs import enable_compile_cache  # noqa: PLC0415

    enable_compile_cache(compile_cache)
    return jax_main(argv)


if __name__ == "__main__":
    main()
