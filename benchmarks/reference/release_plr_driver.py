"""Per-cycle driver of the minimax release (facebookresearch/minimax at d053054, unmodified) for
its PLR family: robust PLR (`plr`), ACCEL (`accel`) and parallel PLR (`pplr`), the release's own
`configs/maze/<method>.json` as they are (buffer 4000). It writes one JSON line per cycle in the
raw format that `benchmarks/curriculum_parity.py: from_release_driver` reads
(`benchmarks/results/parity_<method>4000/release_seed<S>.jsonl`).

It runs ONLY in the release's own virtual environment, never in ours: the release's package is
also named `minimax` and would shadow (or be shadowed by) this repository's. Setup (outside the
repo, e.g. /work/refenv and /work/refsrc/minimax):

    git clone https://github.com/facebookresearch/minimax /work/refsrc/minimax
    git -C /work/refsrc/minimax checkout d053054
    python3.11 -m venv /work/refenv
    /work/refenv/bin/pip install jax==0.4.31 jaxlib==0.4.31 flax==0.8.5 optax==0.2.3 chex==0.1.86 \\
        numpy==1.25.2 pandas==1.5.3 tensorflow_probability==0.23.0 'scipy<1.14' wandb GitPython tqdm ipython
    /work/refenv/bin/pip install --no-deps -e /work/refsrc/minimax

Run (from anywhere but this repository's root, so that `import minimax` finds the release):

    cd /tmp && taskset -c 1 /work/refenv/bin/python /work/main/benchmarks/reference/release_plr_driver.py \\
        plr --seed 3 --updates 200 --out /work/main/benchmarks/results/parity_plr4000

The runner is built as the release's `train.py` builds it (its argument parser fed the JSON's
values as `make_cmd` writes them, `PRNGKey(seed)`, `ExperimentRunner.step` jitted, once per
cycle; `--updates` counts cycles). A `PLRRunner` subclass only reads: it hands each played
rollout's rewards and dones and the release's level metrics of the played levels to the host
through `jax.debug.callback`, and adds `drv/is_replay` to the step's stats; the driver reads the
buffer after each cycle. Groups: `new` (fresh levels), `replay` (levels from the buffer),
`mutated` (ACCEL's children of the replayed levels); `ep_<group>_*` count the episodes that
ended in the cycle's rollout on those levels, `lvl_<group>_*` the levels' metrics, `buf_*` the
buffer after the cycle. Lines are appended and flushed per cycle, so a kill keeps what ran.
"""

import argparse
import copy
import json
import math
import os
import sys
import time

os.environ.setdefault("XLA_FLAGS", "--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1")
os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("JAX_PLATFORMS", "cpu")

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

import minimax  # noqa: E402
import minimax.runners.xp_runner as xp_runner  # noqa: E402
from minimax.runners import ExperimentRunner, PLRRunner  # noqa: E402

CONFIG_DIR = os.path.join(os.path.dirname(minimax.__file__), "config", "configs", "maze")


class ReadingPLRRunner(PLRRunner):
    """The release's PLRRunner, plus host callbacks that only read."""

    played = []  # one (rewards, dones, metrics) per real evaluation of the running cycle

    def _eval_and_update_plr(self, rng, levels, level_idxs, train_state, update_plr,
                             parent_idxs=None, dupe_mask=None, fake=False):
        out = super()._eval_and_update_plr(rng, levels, level_idxs, train_state, update_plr,
                                           parent_idxs, dupe_mask, fake)
        if not fake:
            metrics = self.benv.get_env_metrics(levels)
            batch = out[9]
            jax.debug.callback(self._on_played, batch.rewards, batch.dones, metrics)
        return out

    @staticmethod
    def _on_played(rewards, dones, metrics):
        ReadingPLRRunner.played.append(
            (np.asarray(rewards)[0], np.asarray(dones)[0], {k: np.asarray(v)[0] for k, v in metrics.items()}))

    def _compile_stats(self, update_stats, ep_stats, is_replay, env_metrics=None, plr_stats=None):
        stats = super()._compile_stats(update_stats, ep_stats, is_replay, env_metrics, plr_stats)
        stats["drv/is_replay"] = is_replay[0].astype(jnp.float32)
        return stats


def parse_release_args(method: str, seed: int):
    """The release's parsed arguments, from its JSON config as its `make_cmd` writes the command."""
    with open(os.path.join(CONFIG_DIR, f"{method}.json")) as f:
        grid = json.load(f)["args"]
    flags = [f"--{k}={v[0]}" for k, v in grid.items() if v[0] is not None and k != "seed"]
    from minimax.arguments import parser  # noqa: E402 (parses sys.argv)
    saved, sys.argv = sys.argv, ["minimax.train", f"--seed={seed}"] + flags
    try:
        return parser.parse_args()
    finally:
        sys.argv = saved


def build_runner(args):
    """`ExperimentRunner` exactly as the release's train.py builds it, with the reading subclass."""
    xp_runner.RUNNER_INFO["plr"] = xp_runner.RunnerInfo(runner_cls=ReadingPLRRunner)
    a = copy.deepcopy(args)
    return ExperimentRunner(
        train_runner=a.train_runner, env_name=a.env_name, agent_rl_algo=a.agent_rl_algo,
        student_model_name=a.student_model_name, teacher_model_name=a.teacher_model_name,
        train_runner_kwargs=a.train_runner_args, env_kwargs=a.env_args, ued_env_kwargs=a.ued_env_args,
        student_rl_kwargs=a.student_rl_args, teacher_rl_kwargs=a.teacher_rl_args,
        student_model_kwargs=a.student_model_args, teacher_model_kwargs=a.teacher_model_args,
        eval_kwargs=a.eval_args, eval_env_kwargs=a.eval_env_args, n_devices=a.n_devices)


def episodes(rewards, dones):
    """Returns of the episodes that ended in a (T, E) rollout, and the env of each."""
    running = np.zeros(rewards.shape[1], dtype=np.float64)
    returns, envs = [], []
    for t in range(rewards.shape[0]):
        running += rewards[t]
        ended = np.nonzero(dones[t])[0]
        returns += running[ended].tolist()
        envs += ended.tolist()
        running[ended] = 0.0
    return np.array(returns, dtype=np.float64), np.array(envs, dtype=np.int64)


def group_fields(name, returns, metrics):
    """`ep_<name>_*` and `lvl_<name>_*` of one group: its ended episodes and its levels."""
    p = f"{name}_" if name else ""
    n, solved = len(returns), int((returns > 0).sum())
    out = {f"ep_{p}n": n, f"ep_{p}return_sum": float(returns.sum()), f"ep_{p}n_solved": solved,
           f"ep_{p}mean_return": float(returns.mean()) if n else None,
           f"ep_{p}solved_rate": solved / n if n else None}
    walls, path = metrics["n_walls"].astype(np.float64), metrics["shortest_path_length"].astype(np.float64)
    passable = metrics["passable"].astype(bool)
    out.update({f"lvl_{p}n_levels": int(len(walls)), f"lvl_{p}mean_n_walls": float(walls.mean()),
                f"lvl_{p}passable_frac": float(passable.mean())})
    if name:
        out[f"lvl_{p}mean_shortest_path_passable"] = float(path[passable].mean()) if passable.any() else None
    return out


def played_fields(played, is_replay, parallel):
    """Per-group and overall episode and level fields of a cycle's played rollouts."""
    parts = []  # (group, returns, metrics)
    for i, (rewards, dones, metrics) in enumerate(played):
        returns, envs = episodes(rewards, dones)
        if i == 1:
            parts.append(("mutated", returns, metrics))
        elif parallel and is_replay:
            half = rewards.shape[1] // 2
            for g, sel in (("new", slice(0, half)), ("replay", slice(half, 2 * half))):
                mask = (envs >= sel.start) & (envs < sel.stop)
                parts.append((g, returns[mask], {k: v[sel] for k, v in metrics.items()}))
        else:
            parts.append(("replay" if is_replay else "new", returns, metrics))
    out = {}
    for g, returns, metrics in parts:
        out.update(group_fields(g, returns, metrics))
    all_returns = np.concatenate([r for _, r, _ in parts])
    all_metrics = {k: np.concatenate([m[k] for _, _, m in parts]) for k in parts[0][2]}
    out.update(group_fields("", all_returns, all_metrics))
    return out


def buffer_fields(runner, plr_buffer):
    """The buffer's statistics after the cycle (student 0)."""
    b = jax.tree_util.tree_map(lambda x: x[0], plr_buffer)
    dist = np.asarray(jax.jit(runner.plr_mgr._get_replay_dist)(b.scores, b.ages, b.filled), dtype=np.float64)
    filled = np.asarray(b.filled, dtype=bool)
    scores = np.asarray(b.scores, dtype=np.float64)
    ages = np.asarray(b.ages, dtype=np.float64)
    n_mut = np.asarray(b.n_mutations, dtype=np.float64)
    walls = np.asarray(b.levels.wall_map, dtype=np.float64).reshape(len(filled), -1).sum(-1)
    some = filled.any()

    def over_filled(x, fn):
        return float(fn(x[filled])) if some else None

    return {"buf_size": int(filled.sum()), "buf_filled_count": int(np.asarray(b.filled_count)[0]),
            "buf_capacity": int(len(filled)), "buf_mean_score": over_filled(scores, np.mean),
            "buf_max_score": over_filled(scores, np.max), "buf_min_score": over_filled(scores, np.min),
            "buf_mean_staleness": over_filled(ages, np.mean), "buf_max_staleness": over_filled(ages, np.max),
            "buf_mean_n_mutations": over_filled(n_mut, np.mean), "buf_max_n_mutations": over_filled(n_mut, np.max),
            "buf_mean_n_walls": over_filled(walls, np.mean),
            "buf_weighted_score": float((np.where(filled, scores, 0.0) * dist).sum()),
            "buf_weighted_staleness": float((ages * dist).sum()),
            "buf_weighted_n_mutations": float((n_mut * dist).sum()), "buf_replay_dist_sum": float(dist.sum())}


def finite_or_none(x):
    x = float(np.asarray(x))
    return x if math.isfinite(x) else None


def run(method, seed, n_cycles, out_path):
    args = parse_release_args(method, seed)
    xp = build_runner(args)
    runner = xp.runner
    runner_state = list(runner.reset(jax.random.PRNGKey(args.seed)))
    runner_state += [None] * (9 - len(runner_state))  # run()'s plr_buffer=None, as from the 2nd step on
    parallel = bool(args.train_runner_args.use_parallel_eval)
    n_updates_before = 0
    with open(out_path, "w") as f:
        for cycle in range(1, n_cycles + 1):
            ReadingPLRRunner.played = []
            start = time.time()
            stats, _eval_stats, *runner_state = xp.step(runner_state, False)
            jax.block_until_ready(runner_state)
            jax.effects_barrier()
            seconds = time.time() - start
            train_state = runner_state[1]
            is_replay = int(float(stats["drv/is_replay"]) > 0)
            n_updates = int(np.asarray(train_state.n_updates)[0])
            row = {"update": cycle, "seed": seed, "config": f"{method}.json", "is_replay": is_replay,
                   "gradient_update": int(n_updates > n_updates_before),
                   "expected_gradient_update": int(is_replay or not runner.use_robust_plr),
                   "n_grad_updates_total": n_updates, "n_iters": int(np.asarray(train_state.n_iters)[0]),
                   "cycle_seconds": seconds}
            row.update(played_fields(ReadingPLRRunner.played, is_replay, parallel))
            row["mutation_eval_ran"] = int(len(ReadingPLRRunner.played) > 1)
            row.update(buffer_fields(runner, train_state.plr_buffer))
            row.update({f"stats/{k}": finite_or_none(stats[k]) for k in sorted(stats)})
            f.write(json.dumps(row) + "\n")
            f.flush()
            n_updates_before = n_updates
            print(f"{method} seed {seed} cycle {cycle}: replay {is_replay} updates {n_updates} "
                  f"buffer {row['buf_size']} {seconds:.1f}s", flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("method", choices=["plr", "accel", "pplr"])
    ap.add_argument("--seed", type=int, required=True)
    ap.add_argument("--updates", type=int, required=True, help="cycles (calls of ExperimentRunner.step)")
    ap.add_argument("--out", required=True, help="folder; writes release_seed<S>.jsonl there")
    ap.add_argument("--force", action="store_true", help="overwrite an existing non-empty file")
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    out_path = os.path.join(a.out, f"release_seed{a.seed}.jsonl")
    if os.path.exists(out_path) and os.path.getsize(out_path) > 0 and not a.force:
        raise SystemExit(f"error: {out_path} exists (pass --force to overwrite)")
    run(a.method, a.seed, a.updates, out_path)


if __name__ == "__main__":
    main()
