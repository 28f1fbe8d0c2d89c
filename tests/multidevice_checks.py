"""Run by tests/test_scale.py in a subprocess with 4 forced CPU devices; prints one JSON object.

(XLA fixes the device count when JAX starts, so these checks cannot run in the test process.)
"""

import json
import os
import sys

os.environ["XLA_FLAGS"] = os.environ.get("XLA_FLAGS", "") + " --xla_force_host_platform_device_count=4"

import jax  # noqa: E402
import numpy as np  # noqa: E402

from minimax.config import TrainConfig  # noqa: E402
from minimax.config import PRESETS  # noqa: E402
from minimax.training.devices import DeviceError, distribute_init, distribute_step  # noqa: E402
from minimax.training.builder import build_runner, device_layout  # noqa: E402
from minimax.training.loop import seed_keys, train  # noqa: E402
from minimax.training.budget import make_chunk  # noqa: E402

TINY = dict(maze_height=5, maze_width=5, n_walls=3, max_episode_steps=32, n_actions=3, recurrent_size=16,
            num_envs=8, num_steps=16, n_epochs=2, lr=3e-3, progress=False)

PAIRED_TINY = dict(max_episode_steps=12, teacher_n_walls=4, teacher_conv_filters=4, teacher_recurrent_size=8,
                   teacher_noise_dim=3, teacher_n_epochs=1, teacher_lr=3e-3)


def one_update(cfg, updates=1, budget="updates", times=1):
    """(state after init, state after `updates` units of `budget`, metrics) of cfg on its device layout, on the host;
    with `times` > 1, the states after each of `times` such chunks (one program), as a list."""
    layout = device_layout(cfg)
    runner = build_runner(cfg, layout.shard)
    keys, _ = seed_keys(layout)
    state = jax.jit(distribute_init(runner, layout))(keys)
    before = jax.device_get(state)
    # Compiled as train.py compiles its chunks (donating the state), so train() below reuses it.
    step = jax.jit(distribute_step(make_chunk(runner, updates, budget), runner, layout), donate_argnums=0)
    ahead = np.zeros(len(layout.seeds), np.int32) if layout.multi_seed else np.int32(0)  # as train.py passes it
    afters = []
    for _ in range(times):
        state, metrics = step(state, ahead)
        afters.append(jax.device_get(state))
    return before, afters[0] if times == 1 else afters, jax.device_get(metrics)


def max_param_diff(a, b):
    return max(float(np.max(np.abs(np.asarray(x) - np.asarray(y)))) for x, y in
               zip(jax.tree.leaves(a), jax.tree.leaves(b)))


def main(out_dir):
    # Programs compiled twice (the same update for another seed) are loaded from this cache.
    jax.config.update("jax_compilation_cache_dir", os.path.join(out_dir, "jax-cache"))
    jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.5)
    out = {"devices": len(jax.devices())}

    # 1. One DR update at a fixed global batch: the same parameters on 1, 2 and 4 devices.
    dr = TrainConfig.from_options(**TINY)
    init_ref, ref, _ = one_update(dr.replace(devices=1))
    out["dr_param_diff"], out["dr_loss"] = {}, {}
    for d in (1, 2, 4):
        _, after, metrics = one_update(dr.replace(devices=d))
        out["dr_param_diff"][d] = max_param_diff(after.train_state.params, ref.train_state.params)
        out["dr_loss"][d] = float(metrics["policy_loss"][0])
    out["dr_param_change"] = max_param_diff(ref.train_state.params, init_ref.train_state.params)

    # 2. PLR with per-device buffers: each device's buffer holds only the new levels its own envs played.
    # Episodes of at most 8 steps, so every env completes one in the rollout and its level is scored.
    plr = TrainConfig.from_options(**{**TINY, "max_episode_steps": 8}, method="plr", buffer_size=16, min_fill_ratio=0.5,
                      devices=2)
    for global_buffer in (False, True):
        cfg = plr.replace(global_buffer=global_buffer)
        layout = device_layout(cfg)
        runner = build_runner(cfg, layout.shard)
        state, after, _ = one_update(cfg)
        # The first step of PLR plays new levels (empty buffer): env i gets generator(split(k_new, N)[i]).
        k_levels = jax.random.split(state.key, 7)[2]
        played = jax.vmap(runner.generator)(jax.random.split(k_levels, cfg.num_envs))
        fingerprints = [np.asarray(played.wall_map[i]).tobytes() + np.asarray(played.goal_pos[i]).tobytes()
                        + np.asarray(played.agent_pos[i]).tobytes() for i in range(cfg.num_envs)]
        buffers = [jax.tree.map(lambda x, d=d: x[d], after.buffer) for d in range(2)] if not global_buffer \
            else [after.buffer]
        stored = []
        for b in buffers:
            keys = [np.asarray(b.levels.wall_map[j]).tobytes() + np.asarray(b.levels.goal_pos[j]).tobytes()
                    + np.asarray(b.levels.agent_pos[j]).tobytes() for j in np.flatnonzero(b.filled)]
            stored.append(sorted(fingerprints.index(k) if k in fingerprints else -1 for k in keys))
        out["plr_global" if global_buffer else "plr_per_device"] = {
            "buffer_shape": list(after.buffer.scores.shape), "stored_envs": stored}

    # The other PLR-family runners step sharded (2 devices, per-device buffers) and count their
    # cycles: ACCEL's replay cycles add mutations, parallel ACCEL plays parallel PLR's layout. Two
    # cycles with p = 1: new levels fill the buffers, then a replay cycle trains.
    out["methods"] = {}
    mutating = dict(n_mutations=2, mutation_criterion="hard", mutation_subsample=2)
    own = {"accel": mutating, "parallel_accel": mutating, "traced": {**mutating, "traced_hidden": 8},
           "cenie": dict(novelty_window=4, novelty_samples=4, novelty_components=2), "remidi": {}}
    for method, options in own.items():
        cfg = plr.replace(method=method, replay_prob=1.0, **options)
        _, after, metrics = one_update(cfg, updates=2, budget="cycles")
        out["methods"][method] = {"updates": int(after.updates), "env_steps": np.asarray(metrics["env_steps"]).tolist(),
                                  "gradient_updates": np.asarray(metrics["gradient_updates"]).tolist(),
                                  "stored": int(np.asarray(after.buffer.filled).sum()),
                                  "finite": bool(np.isfinite(np.asarray(metrics["policy_loss_sum"])).all())}

    # PLR's cycles of several updates (`--cycle-updates`, `runners/plr_trials.py`) keep the trial per device: two
    # trials of 2 updates, buffers written at each trial's end only.
    out["trials"] = {}
    for global_buffer in (False, True):
        cfg = plr.replace(cycle_updates=2, global_buffer=global_buffer)
        _, (mid, *_, after), _ = one_update(cfg, updates=1, times=4)
        out["trials"]["global" if global_buffer else "per_device"] = {
            "updates": int(after.updates), "phase": np.asarray(after.trial.phase).tolist(),
            "stored_mid_trial": int(np.asarray(mid.buffer.filled).sum()),
            "stored": int(np.asarray(after.buffer.filled).sum())}

    # The update budget's loop of cycles runs sharded too: one PPO update of ACCEL takes its two cycles.
    _, after, metrics = one_update(plr.replace(method="accel", replay_prob=1.0, n_mutations=2), updates=1)
    out["accel_one_update"] = {k: np.asarray(metrics[k]).tolist() for k in ("cycles", "gradient_updates", "stalled")}

    # 3. Seeds x devices: 2 seeds on a (2 seed, 2 data) mesh against each seed alone on one device.
    both = TrainConfig.from_options(**TINY).replace(seeds="0,1", devices=4)
    layout = device_layout(both)
    out["mesh"] = [layout.seed_devices, layout.data_devices]
    _, after, metrics = one_update(both)
    out["seed_param_diff"], out["seed_loss_diff"] = [], []
    for i, seed in enumerate((0, 1)):
        _, alone, m = one_update(TrainConfig.from_options(**TINY).replace(seed=seed, devices=1))
        mine = jax.tree.map(lambda x, i=i: x[i], after.train_state.params)
        out["seed_param_diff"].append(max_param_diff(mine, alone.train_state.params))
        out["seed_loss_diff"].append(abs(float(metrics["policy_loss"][i][0]) - float(m["policy_loss"][0])))

    # A 64-unit LSTM student initialises for several seeds (vmapped; jaxlib 0.10's batched QR, which
    # deadlocks XLA:CPU, is avoided by models/initializers.py).
    big = PRESETS["dr"].replace(num_seeds=2, devices=1, recurrent_size=64, num_envs=8)
    layout = device_layout(big)
    runner = build_runner(big, layout.shard)
    params = jax.jit(distribute_init(runner, layout))(seed_keys(layout)[0]).train_state.params
    out["big_init_shapes"] = sorted({tuple(x.shape[:1]) for x in jax.tree.leaves(params)})

    # PAIRED (a teacher and 2 students, replicated state): one update on 1 and 2 devices. (Seeds in one
    # program against each alone: tests/test_paired.py, on one device.)
    paired = PRESETS["paired"].replace(**{**TINY, **PAIRED_TINY})
    init, ref, _ = one_update(paired.replace(devices=1))
    agents = lambda s: (s.train_state.params, s.teacher.params)  # noqa: E731
    out["paired_change"] = max_param_diff(agents(ref), agents(init))
    out["paired_device_diff"] = max_param_diff(agents(one_update(paired.replace(devices=2))[1]), agents(ref))

    # NCC (a replicated buffer, its scoring passes split over devices): one update on 1 and 2 devices.
    ncc = TrainConfig.from_options(**TINY, method="ncc", ncc_buffer_size=8, ncc_attempts=2, ncc_attempt_steps=32)
    init, ref, _ = one_update(ncc.replace(devices=1))
    _, two, _ = one_update(ncc.replace(devices=2))
    out["ncc"] = {"change": max_param_diff(ref.train_state.params, init.train_state.params),
                  "param_diff": max_param_diff(two.train_state.params, ref.train_state.params),
                  "y_diff": float(np.max(np.abs(np.asarray(two.buffer.y) - np.asarray(ref.buffer.y)))),
                  "scores_equal": bool(np.array_equal(two.buffer.scores, ref.buffer.scores))}

    # 4. Bad layouts fail at once, naming what to change.
    out["errors"] = {}
    for name, overrides in (("batch", dict(num_envs=6, n_minibatches=1, devices=4)), ("too_many", dict(devices=8)),
                            ("buffer", dict(method="robust_plr", buffer_size=10, min_fill_ratio=0.5, devices=4)),
                            ("sfl_batch", dict(method="sfl", sfl_batches=3, sfl_batch_levels=6, sfl_rollout_steps=64,
                                               sfl_episodes=3, sfl_set_size=8, sfl_refresh_every=2, sfl_chunk_steps=8,
                                               devices=4)),
                            ("ncc_buffer", dict(method="ncc", ncc_buffer_size=6, ncc_attempts=2, ncc_attempt_steps=32,
                                                devices=4))):
        try:
            device_layout(TrainConfig.from_options(**{**TINY, **overrides}))
            out["errors"][name] = None
        except DeviceError as e:
            out["errors"][name] = str(e)

    # 5. A short sharded training run (4 devices), for the two-process comparison.
    row = train(TrainConfig.from_options(**TINY, num_updates=2, log_every=1, eval_every=0, checkpoint_every=2, devices=4,
                            out_dir=out_dir, run_name="one-process"))
    out["train_row"] = {k: row[k] for k in ("update", "env_steps", "policy_loss", "value_loss")}
    print(json.dumps(out))


if __name__ == "__main__":
    main(sys.argv[1])
