"""Runs as samples of experiments: which saved configs differ only in bookkeeping (seeds, run
directory, length, logging) and so belong to one experiment, for `plot` (one curve) and
`evaluate` (one confidence interval)."""

from __future__ import annotations

import json

BOOKKEEPING_OPTIONS = frozenset({
    "seed", "seeds", "num_seeds", "run_name", "out_dir", "resume", "overwrite", "num_updates",
    "progress", "wandb", "wandb_project", "keep_checkpoints", "checkpoint_every", "eval_every",
    "preset", "devices", "buffer_png", "coordinator_address", "num_processes", "process_id",
    "num_env_steps", "final_eval_episodes", "time_limit",  # a host-environment run's length, final evaluation, stop
})
"""Options that do not change what a run trains: runs differing only in these (and in their
seeds) are samples of one experiment, which `plot` draws as one curve and `evaluate` pools
into one confidence interval."""

_UNSET = "<unset>"


def experiment_options(options: dict) -> dict:
    """`{option: value}` (flat names) without the bookkeeping ones and those its method and environment
    never read (`table.unused_options`): what defines the experiment. The budget's unit is read as
    what it means: a config saved before `--budget` counted cycles, and a cycle is an update for a
    method whose every cycle trains (its `Method.trains_every_cycle`; its runs then pool with today's)."""
    # The method registry, imported here: plots import this module before they need JAX.
    from minimax.config.table import unused_options  # noqa: PLC0415
    from minimax.core.methods import get_method, method_names  # noqa: PLC0415

    method = options.get("method")
    env = options.get("env", "maze")
    unused = unused_options(method, env) if isinstance(method, str) else frozenset()
    out = {k: v for k, v in options.items() if k not in BOOKKEEPING_OPTIONS and k not in unused}
    budget = out.get("budget", "cycles")
    every_cycle_trains = method in method_names() and get_method(method).trains_every_cycle
    out["budget"] = "updates" if budget == "cycles" and every_cycle_trains else budget
    return out


def experiment_groups(configs: list[dict], names: list[str] | None = None) -> list[tuple[str, list[int]]]:
    """Group flat configs by experiment, in first-seen order: `[(label, member indices)]`. A label
    is the method, with up to three options that tell apart experiments of one method."""
    keys: dict[str, list[int]] = {}
    for i, c in enumerate(configs):
        keys.setdefault(json.dumps(experiment_options(c), sort_keys=True, default=str), []).append(i)
    groups = list(keys.values())
    names = names or ["run"] * len(configs)
    methods = [experiment_method(configs[g[0]], names[g[0]]) for g in groups]
    labels = list(methods)
    for method in set(methods):
        same = [j for j, m in enumerate(methods) if m == method]
        if len(same) < 2:
            continue
        opts = [experiment_options(configs[groups[j][0]]) for j in same]
        differing = [k for k in sorted({k for o in opts for k in o})
                     if len({json.dumps(o.get(k, _UNSET), default=str) for o in opts}) > 1]
        for j, o in zip(same, opts):
            parts = [f"{k}={_show(o.get(k, _UNSET))}" for k in differing[:3]]
            labels[j] = f"{method} ({', '.join(parts)}{', …' if len(differing) > 3 else ''})"
    return list(zip(labels, groups))


def experiment_method(config: dict, name: str = "run") -> str:
    """The method a flat config trains (its preset, or `name`, for configs that lack it)."""
    return str(config.get("method") or config.get("preset") or name)


def _show(v) -> str:
    return v if isinstance(v, str) else json.dumps(v)
