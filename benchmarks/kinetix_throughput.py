"""Kinetix throughput: our wrapped env beside the authors' own, same batch, steps and machine.

Each mode runs `jit(scan(vmap(step)))` over each `--envs` batch for `--steps` steps with uniformly
random multi-discrete actions drawn before the timed region, and reduces every observation to a
checksum (so XLA cannot skip computing it). Size class s, flat symbolic observations:

- ours:     `ReplayAutoReset(KinetixSingle())`, on done back to the start of the same level (PLR replay,
            evaluation; the level's first observation is stored, so a reset renders nothing);
- ours-gen: `GenerateAutoReset(KinetixSingle(), make_kinetix_generator(params))`, on done a fresh level
            from a pool generated only as episodes end (domain randomisation);
- ours-gen-filter: `ours-gen` with the authors' no-op filter on every fresh level (`--kinetix-filter-steps
            64`, their PLR and SFL: 2 levels sampled and played 64 no-op steps each per level kept);
- kinetix:  the authors' `KinetixEnv.step` with `make_reset_fn_sample_kinetix_level` (their PPO's env:
            its auto-reset samples a fresh level on every step and selects it where an episode ended);
- kinetix-noreset: their `step_env`, no reset at all: the cost of the physics and observation alone.

    python benchmarks/kinetix_throughput.py [--envs 32 1024 4096] [--steps 64] [--repeats 3] [--modes ...]
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
from wrapped_env_bench import OURS, checksum_rollout, ours_step, throughput_table

from minimax.envs.kinetix import KinetixParams, KinetixSingle, make_kinetix_generator
from minimax.envs.kinetix.engine import make_kinetix_env

MODES = ("ours", "ours-gen", "ours-gen-filter", "kinetix", "kinetix-noreset")
FILTER_STEPS = 64


def build(mode: str, num_envs: int):
    """`(init(key) -> state, rollout(state, key, actions) -> (state, key, checksum, dones))`, jitted."""
    env, params = KinetixSingle(), KinetixParams()
    if mode in OURS or mode == "ours-gen-filter":
        generate = make_kinetix_generator(params, FILTER_STEPS if mode == "ours-gen-filter" else 0)
        return checksum_rollout(*ours_step(mode.removesuffix("-filter"), env, params, generate, num_envs))
    if mode not in ("kinetix", "kinetix-noreset"):
        raise ValueError(f"unknown mode {mode!r}; choose from {', '.join(MODES)}")
    base, env_params, static = params.objects()
    from kinetix.environment import ActionType, ObservationType  # noqa: PLC0415 (after the engine's import shim)
    from kinetix.environment.ued.ued import make_reset_fn_sample_kinetix_level  # noqa: PLC0415

    with jax.ensure_compile_time_eval():
        theirs = make_kinetix_env(ActionType.MULTI_DISCRETE, ObservationType.SYMBOLIC_FLAT,
                                  make_reset_fn_sample_kinetix_level(env_params, static, None, base.physics_engine),
                                  env_params, static)
    their_step = theirs.step if mode == "kinetix" else (lambda k, s, a, p: theirs.step_env(k, s, a, p))

    def init(key):
        return jax.vmap(lambda k: theirs.reset(k, env_params))(jax.random.split(key, num_envs))[1]

    def step(key, state, actions):
        keys = jax.random.split(key, num_envs)
        return jax.vmap(lambda k, s, a: their_step(k, s, a, env_params))(keys, state, actions)
    return checksum_rollout(init, step)


def random_actions(steps: int, num_envs: int):
    """Uniform over each dimension's options (3 per motor, 2 per thruster)."""
    nvec = jnp.asarray(KinetixSingle().action_space(KinetixParams()).nvec)
    return jax.random.randint(jax.random.key(1), (steps, num_envs, nvec.shape[0]), 0, nvec)


def main():
    throughput_table(__doc__, MODES, build, random_actions)


if __name__ == "__main__":
    main()
