"""What one cycle of a PLR-family method costs, part by part, with its seeds vmapped (issue 55).

    PYTHONPATH=. python benchmarks/cycle_parts.py --preset plr --seeds 4 --tiny
    PYTHONPATH=. python benchmarks/cycle_parts.py --preset accel --seeds 4 --set num_steps=64 recurrent_size=64

Each line is one jitted program called on a state whose buffers are ready (`gpu_suite.py`'s warm-up),
milliseconds per call (mean of `--calls`, after one untimed call): the cycle of new levels and the replay
cycle as the update unit builds them (`cycle(state, False)`, `cycle(state, True)`), the step with its traced
branch (what every cycle cost under `vmap` before issue 55), and their parts: new levels, the rollout, the
PPO update, scoring, finding the levels in the buffer, offering them, the buffer's statistics. With the
unit, an update of robust PLR costs about E[max over seeds of K] cycles of new levels plus one replay
cycle (K: the cycles of new levels before a seed's replay; DESIGN "Skipped updates under vmap").
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import jax
import jax.numpy as jnp

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))
from gpu_suite import TINY, parse_set, sizes  # noqa: E402
from train_throughput import warm_buffer  # noqa: E402
from minimax.agents.ppo import ppo_update  # noqa: E402
from minimax.config import PRESETS  # noqa: E402
from minimax.curricula.level_buffer import locate  # noqa: E402
from minimax.runners import plr_parts as pieces  # noqa: E402
from minimax.training.builder import build_runner, device_layout  # noqa: E402
from minimax.training.devices import distribute_init  # noqa: E402
from minimax.training.loop import seed_keys  # noqa: E402


def parts(r) -> dict:
    """`{name: fn(state)}`: the pieces of one cycle, each a function of one seed's state."""
    n = r.n

    def levels(s):
        return pieces.new_levels(r, s.key, s.training_set, n)[1]

    def played(s):
        return pieces.play(r, s.key, s.train_state.params, s.buffer, levels(s))

    def scored(s):
        return pieces.score(r, played(s), s.buffer, s.train_state.params)

    def offered(s):
        return pieces.score_and_offer(r, s.buffer, played(s), s.train_state.params, True)[0]

    out = {"cycle of new levels (unit)": lambda s: r.cycle(s, False),
           "replay cycle (unit)": lambda s: r.cycle(s, True),
           "step, traced branch": r.step,
           "new levels": levels,
           "+ find in the buffer, rollout, GAE": played,
           "+ scores": scored,
           "+ offer to the buffer": offered,
           "find levels in the buffer": lambda s: locate(s.buffer, levels(s), r.buffer_cfg, r.level_identity),
           "rollout + PPO update": lambda s: ppo_update(s.key, s.train_state, played(s).batch, r.ppo, r.shard),
           "buffer statistics": lambda s: pieces._buffer_stats(r, s.buffer)}
    if r.mutates:
        out["mutate"] = lambda s: pieces.mutate(r, s.key, levels(s), jnp.zeros((n,)), jnp.zeros((n,), jnp.int32))
    return out


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--preset", default="plr", help="a PLR-family preset with a single-group cycle (plr, accel)")
    p.add_argument("--seeds", type=int, default=4)
    p.add_argument("--tiny", action="store_true", help="gpu_suite.py's toy sizes")
    p.add_argument("--set", nargs="*", default=[], metavar="OPTION=VALUE", help="size overrides")
    p.add_argument("--calls", type=int, default=20)
    a = p.parse_args(argv)
    cfg = PRESETS[a.preset].replace(num_seeds=a.seeds, devices=1, **{**(TINY if a.tiny else {}), **parse_set(a.set)})
    layout = device_layout(cfg)
    runner = build_runner(cfg, layout.shard)
    if not callable(getattr(runner, "cycle", None)):
        raise SystemExit(f"--preset {a.preset}: its runner has no cycle(state, replay) (plr, accel have)")
    state = warm_buffer(runner, jax.jit(distribute_init(runner, layout))(seed_keys(layout)[0]), layout, False)
    device = jax.devices()[0]
    print(f"{a.preset} x {a.seeds} seeds, {sizes(a.tiny, a.set)}, {device.platform} {device.device_kind}, "
          f"jax {jax.__version__}\n\n| part | ms per call |\n|---|---:|")
    for name, fn in parts(runner).items():
        program = jax.jit(jax.vmap(fn) if a.seeds > 1 else fn)
        jax.block_until_ready(program(state))
        t0 = time.perf_counter()
        for _ in range(a.calls):
            out = program(state)
        jax.block_until_ready(out)
        print(f"| {name} | {1000 * (time.perf_counter() - t0) / a.calls:.2f} |", flush=True)


if __name__ == "__main__":
    main()
