"""Training throughput: compile time and seconds per PPO update after compilation, in the steady state.

Builds the runner of a preset (default `dr`: 32 envs x 256 steps, LSTM 256, 5 epochs x 1
minibatch) and times the program the training loop runs: `--chunk` PPO updates of the student
(`budget.make_chunk`: rollouts, GAE, PPO, level buffer), measured after `block_until_ready`.

For the PLR family an update may take several rollout cycles (robust PLR and ACCEL play
new levels without gradients until they replay), so the report also gives cycles and
env steps per update and seconds per cycle. The steady state is measured: a PLR-family
runner first plays cycles until its buffer is ready (its warm-up, reported apart), then
`--warmup` untimed calls run, then the `--repeats` timed ones.

For the learned-teacher presets (`paired`, `pop_paired`, `minimax_adversary`) `--breakdown`
also times the parts of one update, each compiled alone: the teacher's designs, the students'
rollouts, the students' PPO and the teacher's PPO.

    python benchmarks/train_throughput.py [--preset dr] [--chunk 5] [--repeats 3] [--warmup 1] [--envs 32] [--steps 256]
    python benchmarks/train_throughput.py --preset paired --chunk 1 --repeats 2 --breakdown
    python benchmarks/train_throughput.py --preset dr,dr_s5 --chunk 2      # side by side, one process
    python benchmarks/train_throughput.py --preset dr_s5 --set s5_scan=parallel
"""

from __future__ import annotations

import argparse
import platform
import time

import jax
import jax.numpy as jnp
import numpy as np

from minimax.config import ConfigError, TrainConfig
from minimax.config import PRESETS
from minimax.models.s5 import resolve_scan
from minimax.core.options import parse_assignments
from minimax.training.builder import build_runner
from minimax.agents.ppo import ppo_update
from minimax.runners import PAIREDRunner
from minimax.runners.design import design_levels
from minimax.runners.plr_parts import buffer_ready
from minimax.runners.rollout import play_levels, ppo_batch
from minimax.training.budget import make_chunk
from minimax.training.devices import distribute_step


def best_time(fn, *args, repeats: int) -> float:
    """Seconds of the fastest of `repeats` calls of the compiled `fn` (after one untimed call)."""
    jax.block_until_ready(fn(*args))
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        jax.block_until_ready(fn(*args))
        times.append(time.perf_counter() - t0)
    return min(times)


def paired_breakdown(runner: PAIREDRunner, state, repeats: int) -> dict:
    """Seconds of each part of one learned-teacher update, each part compiled alone."""
    key = jax.random.key(1)
    n = runner.n

    def design(key, teacher):
        return design_levels(key, runner.teacher_env, runner.teacher_params, teacher.apply_fn, teacher.params,
                             runner.teacher_model.initial_carry(n), n, unroll=runner.teacher_ppo.unroll)

    def play(key, params, levels):
        def one(key, p):
            return play_levels(key, runner.env, runner.env_params, runner.model.apply, p,
                               runner.model.initial_carry(n), levels, runner.num_steps)
        return jax.vmap(one)(jax.random.split(key, runner.n_students), params)

    def students_ppo(key, students, rollouts):
        batches = jax.vmap(lambda r: ppo_batch(r, runner.ppo))(rollouts)
        return jax.vmap(lambda k, ts, b: ppo_update(k, ts, b, runner.ppo))(
            jax.random.split(key, runner.n_students), students, batches)

    def teacher_ppo(key, teacher, design_rollout):
        batch = ppo_batch(design_rollout, runner.teacher_ppo)
        return ppo_update(key, teacher, batch, runner.teacher_ppo)

    design_j, play_j = jax.jit(design), jax.jit(play)
    students_j, teacher_j = jax.jit(students_ppo), jax.jit(teacher_ppo)
    design_rollout, levels = design_j(key, state.teacher)
    rollouts = play_j(key, state.train_state.params, levels)
    return {"teacher designs": best_time(design_j, key, state.teacher, repeats=repeats),
            f"{runner.n_students} students' rollouts": best_time(play_j, key, state.train_state.params, levels,
                                                               repeats=repeats),
            f"{runner.n_students} students' PPO": best_time(students_j, key, state.train_state, rollouts,
                                                          repeats=repeats),
            "teacher's PPO": best_time(teacher_j, key, state.teacher, design_rollout, repeats=repeats)}


def core_name(model) -> str:
    """`LSTM 256`, or `S5 256 (2 layers, sequential scan)`."""
    name = f"{model.recurrent_cell.upper()} {model.recurrent_size}"
    if model.recurrent_cell == "s5":
        name += f" ({model.s5_layers} layers, {resolve_scan(model.s5_scan)} scan)"
    return name


def warm_buffer(runner, state, layout=None, verbose: bool = True):
    """A PLR-family run state whose level buffers are ready to replay, every seed's (cycles played one
    at a time, none timed); other runners' states as they are. `layout`: the state's seeds x devices
    (`devices.DeviceLayout`; None: one seed, one device, as `runner.init` makes it)."""
    if not hasattr(state, "buffer"):
        return state
    chunk = make_chunk(runner, 1, "cycles")
    multi = layout is not None and layout.multi_seed
    play = jax.jit(distribute_step(chunk, runner, layout) if layout is not None else chunk, donate_argnums=0)
    ready = jax.jit(lambda b: jnp.all(jax.vmap(lambda x: buffer_ready(runner, x))(b)) if multi else buffer_ready(runner, b))
    t0, cycles, grads = time.perf_counter(), 0, 0
    while not bool(ready(state.buffer)):
        state, metrics = play(state)
        cycles += 1
        grads += int(np.asarray(metrics["gradient_updates"]).sum())
    if verbose:
        print(f"buffer warm-up: {cycles} cycles ({grads} with an update) in {time.perf_counter() - t0:.1f} s "
              f"(compile included), not timed below")
    return state


def measure(preset: str, args, overrides: dict) -> None:
    cfg = PRESETS[preset].replace(**overrides)
    runner = build_runner(cfg)
    state = jax.jit(runner.init)(jax.random.key(0))
    jax.block_until_ready(state)

    t0 = time.perf_counter()
    program = jax.jit(make_chunk(runner, args.chunk), donate_argnums=0).lower(state).compile()
    compile_s = time.perf_counter() - t0

    state = warm_buffer(runner, state)
    for _ in range(args.warmup):
        state, metrics = program(state)
        jax.block_until_ready(metrics)
    times, cycles, env_steps = [], 0, 0
    for _ in range(args.repeats):
        t0 = time.perf_counter()
        state, metrics = program(state)
        jax.block_until_ready(metrics)
        seconds = time.perf_counter() - t0
        times.append(seconds / args.chunk)
        cycles += int(metrics["cycles"].sum())
        env_steps += int(metrics["env_steps"].sum())
    per_update = min(times)
    mean_update = sum(times) / len(times)  # updates take a varying number of cycles: the mean is the rate
    updates = args.chunk * args.repeats
    print(f"preset {preset}: {cfg.num_envs} envs x {cfg.num_steps} steps, {core_name(runner.model)}, "
          f"{cfg.ppo.n_epochs} epochs x {cfg.ppo.n_minibatches} minibatch")
    print(f"compile (chunk of {args.chunk} updates): {compile_s:.1f} s")
    print(f"seconds per update: {mean_update:.3f} mean, {per_update:.3f} best of {args.repeats} (all: "
          f"{', '.join(f'{t:.3f}' for t in times)})")
    print(f"cycles per update: {cycles / updates:.2f}, env steps per update: {env_steps / updates:,.0f}, "
          f"seconds per cycle: {mean_update * updates / cycles:.3f} (mean)")
    print(f"env steps per second (training, incl. PPO): {env_steps / (mean_update * updates):,.0f}")
    if args.breakdown and isinstance(runner, PAIREDRunner):
        for part, seconds in paired_breakdown(runner, state, args.repeats).items():
            print(f"  {part}: {seconds:.3f} s")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--preset", default="dr",
                        help=f"preset, or comma-separated presets measured one after another in this process "
                             f"(side by side): {', '.join(PRESETS)}")
    parser.add_argument("--chunk", type=int, default=5, help="updates per compiled call")
    parser.add_argument("--repeats", type=int, default=3, help="timed calls (after one warm-up call)")
    parser.add_argument("--warmup", type=int, default=1, help="untimed calls after the buffer is ready")
    parser.add_argument("--envs", type=int, default=None, help="override --num-envs")
    parser.add_argument("--steps", type=int, default=None, help="override --num-steps")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                        help="override a training option of every preset (e.g. s5_scan=parallel); repeatable")
    parser.add_argument("--breakdown", action="store_true", help="learned-teacher presets: time each part too")
    args = parser.parse_args()

    presets = [p.strip() for p in args.preset.split(",") if p.strip()]
    unknown = [p for p in presets if p not in PRESETS]
    if unknown or not presets:
        parser.error(f"--preset: unknown preset(s) {', '.join(unknown) or '(none)'}; choose from {', '.join(PRESETS)}")
    try:
        overrides = parse_assignments(args.set, TrainConfig.option_types())
    except ConfigError as e:
        parser.error(str(e))
    overrides.update({k: v for k, v in (("num_envs", args.envs), ("num_steps", args.steps)) if v is not None})
    print(f"{platform.processor() or platform.machine()} | jax {jax.__version__} | {jax.devices()[0].platform}")
    for preset in presets:
        measure(preset, args, overrides)


if __name__ == "__main__":
    main()
