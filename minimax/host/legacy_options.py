"""The host path's option names before it took the compiled path's vocabulary: saved runs still load,
a command line with an old name is refused saying the new one.

`python train.py --env procgen-<game>` once took its own names for ideas the compiled path names
differently (`--strategy` for `--score-function`, `--alpha` for `--score-alpha`, ...). Those names
were deprecated for a release; today `refuse_old_flags` names the replacement of each in one line
(a rename that changed a value, `--nu` and `--num-env-steps`, says how), and `translate_saved`
reads a saved `config.json` of an older run in today's names, silently, so old runs keep loading
(`evaluate.py`) and resuming. Options that only the compiled path has (`--seeds`, `--preset`,
`--buffer-size`, ...) are refused in one line saying why.

Score names: where the host sampler computes what the compiled path's score of that name computes
(`minimax/curricula/scores.py`), it takes that name. Two host scores are the reference's own
formulas and keep names of their own: `one_step_td_level_replay` is facebookresearch/level-replay's
`|r_t + V_t - V_{t+1}|` as written there (the compiled path's `one_step_td` is
`|r_t + gamma V_{t+1} (1 - d_t) - V_t|`, which the host offers too), and `normalized_policy_entropy`
is the entropy divided by that of the uniform policy (`policy_entropy` is the plain entropy on both).
"""

from __future__ import annotations

from minimax.core.options import ConfigError

RENAMED_SCORES = {"value_l1": "l1_value_loss", "positive_value_loss": "pvl",
                  "one_step_td_error": "one_step_td_level_replay"}
"""Old host score name -> today's (the same formula)."""

OLD_STRATEGY_ONLY = {"policy_entropy": "normalized_policy_entropy"}
"""Old `--strategy` values whose formula today's name of that spelling does not compute."""

OLD_FLAGS = {
    "--strategy": "--score-function (old score names: value_l1 is l1_value_loss, positive_value_loss pvl, "
                  "one_step_td_error one_step_td_level_replay, policy_entropy normalized_policy_entropy)",
    "--alpha": "--score-alpha",
    "--eps": "--greedy-eps",
    "--num-train-levels": "--train-levels",
    "--nu": "--replay-prob 1-P (--nu P was the probability of a new level under --replay-schedule fixed)",
    "--num-env-steps": "--num-updates ceil(S / (num_envs x num_steps)) --budget env_steps for --num-env-steps S",
}
"""Old host flag -> what to give instead."""

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


def refuse_old_flags(argv: list[str]) -> None:
    """A `ConfigError` for the first old host name or compiled-only option in `argv`, naming what to give."""
    for arg in argv:
        name = arg.split("=", 1)[0]
        if name in OLD_FLAGS:
            raise ConfigError(f"{name} is an old host option name: give {OLD_FLAGS[name]}")
        if name in JAX_ONLY:
            raise ConfigError(f"{name}: {JAX_ONLY[name]}")
    if "--score-function" in argv:  # the old score names, under today's flag
        i = argv.index("--score-function")
        old = argv[i + 1] if i + 1 < len(argv) else ""
        if old in RENAMED_SCORES:
            raise ConfigError(f"--score-function {old} is an old host score name: give --score-function "
                              f"{RENAMED_SCORES[old]} (the same formula)")


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
