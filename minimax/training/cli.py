"""`python train.py`: the command line of a training run (`minimax.training.loop` is the loop it starts).

The run's config comes from a preset's defaults, or from a saved config (`--config PATH`, or the
run's own with `--resume`), overridden by the flags; a resumed run keeps every option that
changes what an update computes.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
from pathlib import Path
import typing
from typing import Annotated, Literal

import tyro

from minimax.training.checkpoint import CheckpointError
from minimax.config import ConfigError, TrainConfig
from minimax.config.hyperparams import traced_options
from minimax.config.run import CompiledRunOptions
from minimax.core.options import checked, checks_deferred, flag
from minimax.config.table import CORE_GROUPS, GROUPS, OPTION_TYPES, OPTIONS, declared_groups, owners
from minimax.core.methods import get_method, method_names
from minimax.envs.registry import env_names
from minimax.training.devices import DeviceError
from minimax.config import PRESETS
from minimax.training.stop_signals import RunStopped
from minimax.training.loop import RESUME_OVERRIDABLE, RunError, train


def _given(argv: list[str], name: str) -> bool:
    return any(a == name or a.startswith(name + "=") for a in argv)


def parse_config(argv: list[str]) -> TrainConfig:
    """The run's config: preset defaults, or a saved config (`--config PATH`, or the run's own
    with --resume), overridden by the command line.

    A resumed run keeps every option that changes what an update computes; where it lives is
    not one of them, so a run moved or renamed resumes from its new place (`--out-dir`,
    `--run-name`). `argv` is the command line without the program (the commands in `cli/` read `sys.argv`)."""
    argv = list(argv)
    pre = argparse.ArgumentParser(add_help=False)
    pre.add_argument("--preset", default="dr")
    pre.add_argument("--resume", action="store_true")
    pre.add_argument("--config")
    for name in ("run-name", "out-dir", "method", "seed", "env"):
        pre.add_argument(f"--{name}")
    known, _ = pre.parse_known_args(argv)
    if known.resume and _given(argv, "--overwrite"):
        raise ConfigError("--resume continues the run and --overwrite deletes it to start afresh: give one of them")
    if known.preset not in PRESETS:
        raise ConfigError(f"--preset must be one of {', '.join(PRESETS)}, got {known.preset!r}")
    argv = [a for i, a in enumerate(argv) if not (a == "--config" or a.startswith("--config=")
                                                   or (i and argv[i - 1] == "--config"))]
    default = PRESETS[known.preset]
    if known.config is not None:
        if known.resume:
            raise ConfigError("--config starts a new run from a saved config; --resume continues a run with its "
                              "own config: give one of them")
        path = Path(known.config)
        if path.is_dir():
            path = path / "config.json"
        if not path.is_file():
            raise ConfigError(f"--config: no config file at {path}")
        if _given(argv, "--preset"):
            raise ConfigError("--preset and --config both give the defaults: give one of them")
        default = TrainConfig.load(path).replace(resume=False, overwrite=False)
    saved = None
    if known.resume and "-h" not in argv and "--help" not in argv:
        probe = default.replace(**{k: v for k, v in dict(
            run_name=known.run_name, out_dir=known.out_dir, method=known.method,
            seed=None if known.seed is None else int(known.seed)).items() if v is not None})
        path = probe.run_dir / "config.json"
        if not path.exists():
            legacy = probe.run_dir.parent / probe.legacy_name
            hint = (f"; runs started before run names followed the preset are named by method: --run-name "
                    f"{probe.legacy_name}" if not known.run_name and (legacy / "config.json").exists() else "")
            raise RunError(f"--resume: no run to resume at {probe.run_dir} (no config.json){hint}")
        saved = TrainConfig.load(path)
        if _given(argv, "--preset") and known.preset != saved.preset:
            raise ConfigError(f"--resume keeps the run's saved config, which started from --preset {saved.preset}: "
                              f"--preset {known.preset} would change nothing (leave it out)")
        # Where the run lives now (it may have been moved or renamed) is where it was found.
        default = saved.replace(resume=True, out_dir=str(probe.run_dir.parent), run_name=probe.run_dir.name)
    method, env = known.method or default.method, known.env or default.env.env_name
    refuse_undeclared(argv, method, env)
    cfg = _parse(argv, default, declared_groups(method, env))
    if saved is not None:
        given, kept = cfg.options(), saved.options()
        changed = [n for n in given if given[n] != kept[n] and n not in RESUME_OVERRIDABLE]
        if changed:
            legacy = (" (a run made before --budget existed counted rollout cycles and resumes so)"
                      if "budget" in changed and kept["budget"] == "cycles" else "")
            raise ConfigError("--resume keeps the run's saved config; these options differ from it: " + ", ".join(
                f"{flag(n)} (saved {kept[n]!r}, given {given[n]!r})" for n in changed) + legacy)
    return cfg


def _parse(argv: list[str], default: TrainConfig, declared) -> TrainConfig:
    """tyro over the run's options and the groups its method and environment declare (all of them for a
    method not registered: the config's check then names it), flat flags (`--lr`, not `--ppo.lr`)."""
    groups = [g for g in GROUPS if declared is None or g in declared]
    method_help = ("Autocurriculum, by registered name: " + ", ".join(method_names()) + " (a plugin's too). On a "
                   "host environment (procgen-*, gym-*): a method that declares a host protocol (" +
                   ", ".join(n for n in method_names() if get_method(n).host) + "; default there: plr).")
    method = ("method", Annotated[str, tyro.conf.arg(help=method_help)], dataclasses.field(default="dr"))
    shape = dataclasses.make_dataclass(
        "TrainConfig", [method] + [(g, GROUPS[g], dataclasses.field(default_factory=GROUPS[g])) for g in groups],
        bases=(CompiledRunOptions,), frozen=True, namespace={"__doc__": TrainConfig.__doc__})
    run = [f.name for f in dataclasses.fields(CompiledRunOptions)]
    start = shape(**{n: getattr(default, n) for n in run + groups})
    with checks_deferred():  # a group's bad value is then one line (`checked` below), not tyro's box
        parsed = _tyro_cli(shape, start, argv)
    core = {g: checked(getattr(parsed, g)) for g in CORE_GROUPS}
    own = {g: checked(getattr(parsed, g)) for g in groups if g not in core}
    return dataclasses.replace(default, **{n: getattr(parsed, n) for n in run}, **core,
                               groups=default.groups.replace(**own))


PLUGIN_HELP = (" --plugin MODULE_OR_FILE.py (repeatable): import a user's registrations (a method, score or "
               "environment) first. The run's config.json records the file and its content hash, so --resume, "
               "evaluate.py, --config and a sweep's reruns import it again by themselves (a file moved or changed "
               "is refused; pass --plugin again to use it where or as it is now).")


def _tyro_cli(shape, start, argv: list[str]):
    description = (TrainConfig.__doc__ + " Methods: " + ", ".join(method_names()) + " (--method). Environments: "
                   + ", ".join(env_names()) + "; on the host: procgen-<game>, gym-<id> (--env). Presets: "
                   + ", ".join(PRESETS) + " (--preset); --config PATH starts from a saved config.json instead." + PLUGIN_HELP
                   + " The "
                   "options listed are those of --method and --env (`--method accel --help`). Traced options (one "
                   "compiled program serves every value of them; a sweep varies them inside one program): "
                   + ", ".join(flag(n) for n in traced_options()) + ". --no-compile-cache: leave XLA's persistent "
                   "compilation cache off (on by default, in ~/.cache/minimax/jax).")
    quiet = not any(a in ("-h", "--help") for a in argv)  # help is tyro's to print
    problem = bad_value(argv) if quiet else None  # before tyro, which prints a box for a bad value whatever it's told
    if problem:
        raise ConfigError(problem)
    try:
        return tyro.cli(tyro.conf.OmitArgPrefixes[shape], default=start, args=argv, prog="train.py",
                        description=description, console_outputs=not quiet)
    except SystemExit as e:
        problem = unknown_flag(argv) if quiet and e.code else None
        if problem:
            raise ConfigError(problem) from None
        if quiet and e.code:  # nothing we can name in one line: tyro's own message
            tyro.cli(tyro.conf.OmitArgPrefixes[shape], default=start, args=argv, prog="train.py")
        raise


def _flags(argv: list[str]):
    """`(flag as written, option name, its value or None)` for each `--flag` of `argv`; a `--no-x` of a boolean
    option is named `x`."""
    for i, arg in enumerate(argv):
        if arg.startswith("--"):
            written, has_value, value = arg[2:].partition("=")
            name = written.replace("-", "_")
            if name.startswith("no_") and name not in OPTIONS and OPTION_TYPES.get(name[3:]) is bool:
                name = name[3:]
            yield written, name, value if has_value else (argv[i + 1] if i + 1 < len(argv) else None)


def bad_value(argv: list[str]) -> str | None:
    """One line for a value outside an option's choices (`--budget weeks`) or not of its type (`--lr abc`)."""
    for _, name, value in _flags(argv):
        kind = OPTION_TYPES.get(name)
        allowed = typing.get_args(kind) if typing.get_origin(kind) is Literal else ()
        if allowed and value is not None and value not in map(str, allowed):  # Literal[3, 7]: the text "3" is fine
            return f"{flag(name)} must be one of {', '.join(map(str, allowed))}, got {value!r}"
        if kind in (int, float) and value is not None:
            try:
                kind(value)
            except ValueError:
                return f"{flag(name)} takes {'an integer' if kind is int else 'a number'}, got {value!r}"
    return None


def unknown_flag(argv: list[str]) -> str | None:
    """One line for a flag no option has; asked only after tyro refused `argv` (so a flag tyro knows is never
    called unknown)."""
    run = {f.name for f in dataclasses.fields(CompiledRunOptions)}
    for written, name, _ in _flags(argv):
        if name not in OPTIONS and name not in run:
            return f"unknown option --{written} (train.py --help lists the options)"
    return None


def refuse_undeclared(argv: list[str], method: str, env: str) -> None:
    """One line for a flag of an option group that neither `--method` nor `--env` declares: it would
    change nothing (before tyro, which would call it unrecognised)."""
    declared = declared_groups(method, env)
    if declared is None:
        return
    unused = set()
    for _, name, _ in _flags(argv):
        group = OPTIONS.get(name, (None,))[0]
        if group is not None and group not in declared:
            unused.add(name)
    if unused:
        them = "them" if len(unused) > 1 else "it"
        groups = sorted({OPTIONS[n][0] for n in unused})
        raise ConfigError(f"--method {method} does not use {', '.join(flag(n) for n in sorted(unused))}, nor does "
                          f"--env {env}: leave {them} out (" + "; ".join(f"{flag(g)[2:]} options: {owners(g)}"
                                                                       for g in groups) + ")")


def main(argv: list[str]) -> None:
    """Train a JAX-environment run from the command line `argv` (`minimax.cli.train` picks this path)."""
    argv = list(argv)
    try:
        cfg = parse_config(argv)
        train(cfg)
    except RunStopped as e:
        print(e, file=sys.stderr)
        raise SystemExit(e.exit_status) from None
    except (ConfigError, RunError, CheckpointError, DeviceError) as e:
        print(f"error: {e}", file=sys.stderr)
        raise SystemExit(2) from None
