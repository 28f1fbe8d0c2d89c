"""The host path's option names before it took the JAX path's vocabulary, kept for one release.

`python train.py --env procgen-<game>` once took its own names for ideas the compiled path names
differently (`--strategy` for `--score-function`, `--alpha` for `--score-alpha`, ...). They still
work until the next release: `translate_argv` rewrites them into today's names and prints one
deprecation line each, naming the new option (and value). `translate_saved` does the same,
silently, for a saved `config.json` of an older run, so old runs keep loading (`evaluate.py`) and
their configs keep resuming. Options that only the compiled path has (`--seeds`, `--preset`,
`--buffer-size`, ...) are refused in one line saying why.

Score names: where the host sampler computes what the compiled path's score of that name computes
(`minimax/curricula/scores.py`), it takes that name. Two host scores are the reference's own
formulas and keep names of their own: `one_step_td_level_replay` is facebookresearch/level-replay's
`|r_t + V_t - V_{t+1}|` as written there (the compiled path's `one_step_td` is
`|r_t + gamma V_{t+1} (1 - d_t) - V_t|`, which the host offers too), and `normalized_policy_entropy`
is the entropy divided by that of the uniform policy (`policy_entropy` is the plain entropy on both).
"""

from __future__ import annotations

import math
import sys

from minimax.core.options import ConfigError

RENAMED_FLAGS = {"--strategy": "--score-function", "--alpha": "--score-alpha", "--eps": "--greedy-eps",
                 "--num-train-levels": "--train-levels"}
"""Old host flag -> today's (same values, but score names: `RENAMED_SCORES`)."""

RENAMED_SCORES = {"value_l1": "l1_value_loss", "positive_value_loss": "pvl",
                  "one_step_td_error": "one_step_td_level_replay"}
"""Old host score name -> today's (the same formula)."""

OLD_STRATEGY_ONLY = {"policy_entropy": "normalized_policy_entropy"}
"""Old `--strategy` values whose formula today's name of that spelling does not compute."""

JAX_ONLY = {
    "--seeds": "host-environment runs train one seed per run (their envs step on the host: there is nothing to "
               "vmap over seeds); run one command per --seed",
    "--num-seeds": "host-environment runs train one seed per run (their envs step on the host: there is nothing "
                   "to vmap over seeds); run one command per --seed",
    "--preset": "host-environment runs have no presets: their defaults are the PLR paper's Procgen protocol "
                "(docs/host_envs.md); choose the curriculum with --method",
    "--buffer-size": "the host level sampler scores every training level (no buffer): its size is --train-levels",
    "--min-fill-ratio": "the host level sampler replays once --rho of the training levels are seen",
}
"""Options of the compiled path that a host run refuses, with why."""


def _warn(message: str) -> None:
    print(f"warning: {message}", file=sys.stderr)


def _split(arg: str) -> tuple[str, str | None]:
    return tuple(arg.split("=", 1)) if arg.startswith("--") and "=" in arg else (arg, None)  # type: ignore[return-value]


def _score_value(old_flag: str, value: str) -> str:
    """Today's name of score `value` given under `old_flag` (`--strategy` or `--score-function`)."""
    new = RENAMED_SCORES.get(value) or (OLD_STRATEGY_ONLY.get(value) if old_flag == "--strategy" else None)
    if new is not None:
        _warn(f"score {value!r} is now called {new!r} (the old name goes in the next release): "
              f"--score-function {new}")
    return new or value


def translate_argv(argv: list[str]) -> tuple[list[str], int | None]:
    """`argv` with the old host names rewritten to today's (one deprecation line each on stderr), and the
    value of a deprecated `--num-env-steps` (None if not given), which `parse_host_config` turns into
    `--num-updates` once `--num-envs` and `--num-steps` are known. Raises `ConfigError` for a compiled-path
    option or a bad value of a rewritten one."""
    out, env_steps, i = [], None, 0
    ours = set(JAX_ONLY) | set(RENAMED_FLAGS) | {"--num-env-steps", "--nu", "--score-function"}
    while i < len(argv):
        flag, inline = _split(argv[i])
        if flag not in ours:
            out.append(argv[i])
            i += 1
            continue
        has_value = inline is not None or (i + 1 < len(argv) and not argv[i + 1].startswith("--"))
        value = inline if inline is not None else (argv[i + 1] if has_value else None)
        step = 1 if inline is not None or not has_value else 2
        if flag in JAX_ONLY:
            raise ConfigError(f"{flag}: {JAX_ONLY[flag]}")
        if flag in ("--num-env-steps", "--nu") and value is None:
            raise ConfigError(f"{flag} needs a value")
        if flag == "--num-env-steps":
            env_steps = _number(flag, value, int)
        elif flag == "--nu":
            replay = 1.0 - _number(flag, value, float)
            _warn(f"--nu is deprecated (it goes in the next release): --nu {value} is --replay-prob {replay:g}, "
                  "the replay probability of --replay-schedule fixed")
            out += ["--replay-prob", repr(replay)]
        elif flag in RENAMED_FLAGS:
            new = RENAMED_FLAGS[flag]
            _warn(f"{flag} is deprecated (it goes in the next release): use {new}")
            if value is not None and flag == "--strategy":
                value = _score_value(flag, value)
            out += [new] + ([value] if value is not None else [])
        elif value is not None:  # --score-function
            out += [flag, _score_value(flag, value)]
        else:
            out.append(flag)
        i += step
    return out, env_steps


def _number(flag: str, text: str, kind):
    try:
        value = kind(text)
    except ValueError:
        raise ConfigError(f"{flag} takes {'an integer' if kind is int else 'a number'}, got {text!r}") from None
    if kind is float and not math.isfinite(value):
        raise ConfigError(f"{flag} takes a finite number, got {text!r}")
    return value


def env_steps_to_updates(env_steps: int, num_envs: int, num_steps: int) -> int:
    """`--num-env-steps N` as `--num-updates` of `--budget env_steps`: rollouts of num_envs x num_steps,
    rounded up (as the old option was)."""
    if env_steps < 1:
        raise ConfigError(f"--num-env-steps must be an integer >= 1, got {env_steps}")
    return -(-env_steps // (num_envs * num_steps))


def warn_env_steps(env_steps: int, updates: int) -> None:
    _warn(f"--num-env-steps is deprecated (it goes in the next release): --num-env-steps {env_steps} is "
          f"--num-updates {updates} --budget env_steps (batches of --num-envs x --num-steps env steps)")


def translate_saved(values: dict) -> dict:
    """A saved host config (flat dict, as `config.json` holds it) in today's names; unchanged if already."""
    values = dict(values)
    if "num_train_levels" in values:
        values["train_levels"] = values.pop("num_train_levels")
    if "num_env_steps" in values:
        per = int(values.get("num_envs", 64)) * int(values.get("num_steps", 256))
        values["num_updates"] = -(-int(values.pop("num_env_steps")) // per)
        values["budget"] = "env_steps"
    sampler = values.get("sampler")
    if isinstance(sampler, dict) and "strategy" in sampler:
        sampler = dict(sampler)
        old = sampler.pop("strategy")
        sampler["score_function"] = RENAMED_SCORES.get(old) or OLD_STRATEGY_ONLY.get(old, old)
        for before, after in (("alpha", "score_alpha"), ("eps", "greedy_eps")):
            if before in sampler:
                sampler[after] = sampler.pop(before)
        if "nu" in sampler:
            sampler["replay_prob"] = 1.0 - float(sampler.pop("nu"))
        values["sampler"] = sampler
    return values
