"""AMaze demo: random agents in both reset modes, level statistics, renders and a GIF.

`python -m minimax.cli.demo`: it exercises every part of
the environment a trainer will use and writes pictures a person can look at.
"""

from __future__ import annotations

import dataclasses
import json
import os

import jax
import jax.numpy as jnp
import numpy as np
import tyro

from minimax.envs import GenerateAutoReset, ReplayAutoReset
from minimax.envs.maze import AMaze, make_dr_generator
from minimax.envs.maze.ood import SUITES, get_maze, list_mazes
from minimax.envs.maze.paths import env_metrics
from minimax.envs.maze.render import render_level, render_state, save_gif, save_png, tile_frames


@dataclasses.dataclass(frozen=True)
class DemoConfig:
    """Random agents on AMaze: domain randomisation (generate mode) and the validation mazes (replay mode)."""

    num_envs: int = 256
    """Parallel environments in each mode."""
    num_steps: int = 1000
    """Environment steps per env in each mode."""
    n_walls: int = 60
    """Wall draws (with replacement) of the domain-randomisation generator."""
    seed: int = 0
    """Random seed; the same seed gives the same numbers and pictures."""
    out_dir: str = "runs/demo"
    """Where the summary, level renders and episode GIF are written."""

    def __post_init__(self):
        for name in ("num_envs", "num_steps"):
            if getattr(self, name) < 1:
                raise ValueError(f"--{name.replace('_', '-')} must be >= 1, got {getattr(self, name)}")
        if not 0 <= self.n_walls <= 167:
            raise ValueError(f"--n-walls must be in [0, 167] for 13x13 mazes, got {self.n_walls}")


def rollout_stats(step, state, key, num_envs, num_steps, n_actions):
    """Scan random actions; return the count, solved rate and mean return of completed episodes.

    (No speed figure: random actions never read the observation, so XLA skips computing it;
    `benchmarks/env_throughput.py` measures speed properly.)"""

    def body(carry, key):
        state, ret = carry
        k_act, k_step = jax.random.split(key)
        actions = jax.random.randint(k_act, (num_envs,), 0, n_actions)
        _, state, reward, done, info = step(k_step, state, actions)
        ret = ret + reward
        out = (done, jnp.where(done, ret, 0.0), info["solved"])
        return (state, jnp.where(done, 0.0, ret)), out

    run = jax.jit(lambda s, k: jax.lax.scan(body, (s, jnp.zeros(num_envs)), jax.random.split(k, num_steps)))
    _, (done, returns, solved) = run(state, key)
    done = np.asarray(done)
    episodes = int(done.sum())
    return {"episodes": episodes, "solved_rate": float(np.asarray(solved).sum() / max(episodes, 1)),
            "mean_return": float(np.asarray(returns)[done].mean()) if episodes else 0.0}


def ood_suite_picture(key, pixels: int = 224) -> np.ndarray:
    """One sample of every OOD maze, each scaled to about `pixels` wide, with names."""
    frames, titles = [], []
    for name in list_mazes():
        maze = get_maze(name)
        frames.append(np.asarray(render_level(maze.sample(key), tile_size=max(2, pixels // (maze.width + 2)))))
        titles.append(f"{name} {maze.height}x{maze.width}")
    return tile_frames(frames, ncols=4, titles=titles)


def run_demo(cfg: DemoConfig) -> dict:
    """Run the demo `cfg` describes: writes its summary and pictures under `cfg.out_dir`, returns the summary."""
    os.makedirs(cfg.out_dir, exist_ok=True)
    env = AMaze()
    params = env.default_params()
    key_dr, key_replay, key_pics, key_metrics = jax.random.split(jax.random.key(cfg.seed), 4)
    generator = make_dr_generator(params.height, params.width, n_walls=cfg.n_walls)

    # Generate mode: every episode on a fresh DR level.
    dr = GenerateAutoReset(env, generator, cfg.num_envs)
    _, state = jax.jit(dr.reset, static_argnums=1)(key_dr, params)
    summary = {"dr_generate": rollout_stats(lambda k, s, a: dr.step(k, s, a, params), state, key_dr,
                                            cfg.num_envs, cfg.num_steps, params.n_actions)}

    # Replay mode: the validation mazes, each env replaying its maze.
    replay = ReplayAutoReset(env)
    mazes = [get_maze(n) for n in SUITES["validation"]]
    maze_params = mazes[0].params()
    keys = jax.random.split(key_replay, cfg.num_envs)
    levels = jax.vmap(lambda i, k: jax.lax.switch(i, [m.sample for m in mazes], k))(
        jnp.arange(cfg.num_envs) % len(mazes), keys)
    _, state = jax.vmap(replay.reset_to_level, in_axes=(0, 0, None))(keys, levels, maze_params)
    vstep = jax.vmap(replay.step, in_axes=(0, 0, 0, None))
    summary["validation_replay"] = rollout_stats(
        lambda k, s, a: vstep(jax.random.split(k, cfg.num_envs), s, a, maze_params), state, key_replay,
        cfg.num_envs, cfg.num_steps, maze_params.n_actions)

    # What DR levels look like, by the numbers.
    sample = jax.jit(jax.vmap(generator))(jax.random.split(key_metrics, 1000))
    metrics = jax.jit(jax.vmap(env_metrics))(sample)
    summary["dr_levels"] = {
        "mean_distinct_walls": float(metrics["n_walls"].mean()),
        "solvable_fraction": float(metrics["solvable"].mean()),
        "mean_shortest_path_of_solvable": float(metrics["shortest_path"][metrics["solvable"]].mean()),
    }

    # Pictures: DR levels, the OOD suite, one random-agent episode on SixteenRooms.
    save_png(tile_frames(np.asarray(jax.vmap(render_level)(jax.tree.map(lambda x: x[:16], sample))), ncols=8),
             os.path.join(cfg.out_dir, "dr_levels.png"))
    save_png(ood_suite_picture(key_pics), os.path.join(cfg.out_dir, "ood_suite.png"))
    maze = get_maze("SixteenRooms")
    _, s = env.reset_to_level(None, maze.sample(key_pics), maze_params)
    frames = [render_state(s)]
    step = jax.jit(env.step)
    for k in jax.random.split(key_pics, 60):
        _, s, _, done, _ = step(None, s, jax.random.randint(k, (), 0, 3), maze_params)
        frames.append(render_state(s))
        if done:
            break
    save_gif(np.stack([np.asarray(f) for f in frames]), os.path.join(cfg.out_dir, "random_agent.gif"))

    with open(os.path.join(cfg.out_dir, "summary.json"), "w") as f:
        json.dump(summary, f, indent=2)
    print(json.dumps(summary, indent=2))
    print(f"wrote {cfg.out_dir}/summary.json, dr_levels.png, ood_suite.png, random_agent.gif")
    return summary


def main(argv: list[str] | None = None) -> None:
    """`python -m minimax.cli.demo` / `minimax-demo`: the demo with the command line's options."""
    run_demo(tyro.cli(DemoConfig, args=argv, prog="minimax-demo", description=DemoConfig.__doc__))


if __name__ == "__main__":
    main()
