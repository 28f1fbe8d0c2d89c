"""A custom curriculum from outside the package: a level score and a replay rule of your own,
plugged into the PLR family, trained beside robust PLR on AMaze through the normal loop.

- The score, `positive_td`: the mean positive one-step TD error `max(r + gamma V' (1 - d) - V, 0)`
  over a level's completed episodes. One function of `ScoreInputs` and one `register_score` call;
  `--score-function positive_td` then works for every PLR-family method.
- The replay rule, `warmup_plr`: robust PLR whose replay probability grows with the buffer's fill
  (`p = replay_prob x fill ratio`), so early cycles explore new levels more. One subclass that
  overrides `decide_replay`, and one `register_method` call; `--method warmup_plr` then trains,
  resumes, refuses options it never reads and groups into experiments like ours.
- The replay distribution, `rank_of_fresh_plr`: robust PLR that draws its replays by the rank of how recently
  each level was last drawn (the freshest first) instead of by its score (an ablation of the score's role).
  One subclass that overrides `replay_distribution` (PLR's staleness mix still applies on top).

Everything here comes from `minimax` itself: no module of the package is imported.

    python examples/custom_curriculum.py --num-updates 40    # a few minutes on a 2-core CPU
"""

from __future__ import annotations

import argparse

import jax
import jax.numpy as jnp

import minimax


def positive_td(x: minimax.ScoreInputs):
    """float32[T, N]: `max(r_t + gamma V(s_{t+1}) (1 - d_t) - V(s_t), 0)`."""
    next_values = jnp.concatenate([x.values[1:], x.last_value[None]], axis=0)
    return jnp.maximum(x.rewards + x.gamma * next_values * (1.0 - x.dones) - x.values, 0.0)


class WarmupPLR(minimax.RobustPLRRunner):
    """Robust PLR replaying with probability `replay_prob x fill ratio` once the buffer is ready."""

    method = "warmup_plr"

    def decide_replay(self, key, buffer, training_set):
        return minimax.buffer_ready(self, buffer) & jax.random.bernoulli(
            key, self.replay.replay_prob * minimax.fill_ratio(buffer))


class RankOfFreshPLR(minimax.RobustPLRRunner):
    """Robust PLR drawing replays by the rank of each slot's last-drawn time (the freshest first), not its score."""

    method = "rank_of_fresh_plr"

    def replay_distribution(self, state):
        b, c = state.buffer, self.buffer_cfg
        return minimax.transform_weights(b.last_sampled.astype(jnp.float32), b.filled, "rank", c.temperature, c.eps,
                                         c.top_k, c.rank_ties)


minimax.register_score("positive_td", positive_td, replace=True)
minimax.register_method(minimax.plr_method(WarmupPLR, "robust PLR whose replay rate grows with the buffer"),
                        replace=True)
minimax.register_method(minimax.plr_method(RankOfFreshPLR, "robust PLR replaying the freshest levels first"),
                        replace=True)


def tiny(cfg, args, name):
    """The report's preset at a size that runs on a laptop (a 9x9 maze, a small buffer)."""
    return cfg.replace(run_name=name, out_dir=args.out_dir, overwrite=True, progress=False,
                       num_updates=args.num_updates, num_envs=16, num_steps=64, recurrent_size=32,
                       maze_height=9, maze_width=9, n_walls=15, buffer_size=128, eval_episodes=4,
                       log_every=args.num_updates // 4 or 1, eval_every=args.num_updates // 4 or 1,
                       checkpoint_every=args.num_updates)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--num-updates", type=int, default=40)
    p.add_argument("--out-dir", default="runs")
    args = p.parse_args(argv)
    plr = minimax.PRESETS["plr"]
    runs = {
        "robust PLR, MaxMC (the report's)": tiny(plr, args, "ex-robust_plr"),
        "robust PLR, positive_td (our score)": tiny(plr.replace(score_function="positive_td"), args, "ex-positive_td"),
        "warmup_plr, MaxMC (our replay rule)": tiny(plr.replace(method="warmup_plr"), args, "ex-warmup_plr"),
        "rank_of_fresh_plr (our replay distribution)": tiny(plr.replace(method="rank_of_fresh_plr"), args,
                                                             "ex-rank_of_fresh_plr"),
    }
    results = {}
    for label, cfg in runs.items():
        last = minimax.run_training(cfg)
        results[label] = last
        print(f"{label:38s} held-out solved {last.get('eval/mean_solved_rate')}, "
              f"{last['cycles']} cycles for {last['gradient_updates']} updates")
    return results


if __name__ == "__main__":
    main()
