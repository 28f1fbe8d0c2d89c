"""The PLR level sampler over a finite set of level identifiers, on the host (Procgen, gymnasium).

This is the sampler of the PLR paper's own code (facebookresearch/level-replay,
`level_replay/level_sampler.py`, described in `004_…`), for environments whose levels are
seeds and whose episodes run on the host: levels are picked one at a time, whenever an env
finishes an episode, so the sampler lives beside the env loop rather than in the compiled step.
The score-to-weight math is `curricula/weights.py`, the same code the in-jit `LevelBuffer` runs.

What it keeps, per training level (`seeds`, a finite set such as Procgen's 200):
- `scores`: the last score (EMA with `score_alpha`) of the level's episodes;
- `seen`: the level has been scored at least once (the reference's `unseen_seed_weights`);
- `staleness`: draws since the level was last drawn (every draw adds one to all levels and
  resets the drawn one, as the reference's `_update_staleness`).

`sample()` decides replay or new as the reference does: `proportionate` (replay with probability
= the seen fraction, once it is at least `rho`) or `fixed` (replay with probability `replay_prob`, the
reference's `1 - nu`, once the seen fraction is at least `rho`, always once every level is seen); a
new level is uniform over
the unseen ones, a replayed one drawn from `P_replay = (1 - staleness_coef) P_S + staleness_coef P_C`
with `P_S` from the scores over all levels and masked to the seen ones (the reference ranks all
levels, the unseen at score 0, then zeroes the unseen), `P_C` likewise from staleness.
`score_function="random"` is uniform over the levels (the PLR paper's baseline), `sequential` cycles.

Scores come from rollouts (`update_with_rollout`): a rollout of T steps of N envs splits per env
into episode segments; each segment's score is the mean of per-step terms (`|GAE|` for `l1_value_loss`,
the GAE for `gae`, ...; computed on device by `step_score_terms`). A finished episode updates its
level's score; the unfinished tail of each env (`partial_episodes`):
- `flush` (the reference's `after_update`): scored on its own and committed after the update (if
  its score is nonzero, as the reference); the episode's next part is scored afresh next rollout;
- `carry`: kept as a step-weighted running mean and committed when the episode ends (the
  policy changed in between, so this mixes two policies' terms; offered for long episodes).

Differences from the reference, by design: the random stream is a seeded `numpy.random.Generator`
(checkpointed); rank ties are ordinal with the lower index first (the reference's `np.flip`
of a quicksort leaves tie order to numpy); the power transform has no `+1e-3` when there is no
staleness term (it only matters for all-zero scores, which then give uniform weights instead of
a crash on a distribution that does not sum to one).
"""

from __future__ import annotations

import dataclasses
from typing import Literal

import numpy as np

from minimax.host.segment_tree import SumTree
from minimax.curricula.scores import SCORES
from minimax.curricula.weights import normalize, transform_weights
from minimax.core.options import check

UNSCORED = ("random", "sequential")
"""The sampler's modes that score nothing: uniform over the training levels, or in order."""
ReplaySchedule = Literal["proportionate", "fixed"]
PartialEpisodes = Literal["flush", "carry"]
Draw = Literal["auto", "choice", "tree"]
TREE_FROM = 10_000  # levels from which `auto` draws with the sum trees (benchmarks/segment_tree.py)
Transform = Literal["rank", "power", "softmax", "eps_greedy", "top_k"]


def host_scores() -> tuple[str, ...]:
    """The registered scores a host run can use (`curricula/scores.py`, plugins' included): the per-step ones
    that read the rollout alone (`Score.from_steps_alone`), computed by their own function (`host/learner.py`)."""
    return tuple(name for name, score in SCORES.items() if score.from_steps_alone)


@dataclasses.dataclass(frozen=True)
class SamplerConfig:
    """The level sampler's settings; each is the training command's option of that name (the compiled
    path's name where it means the same). Defaults are the PLR paper's Procgen setting (`l1_value_loss`,
    the paper's value_l1; rank, beta 0.1, staleness 0.1, the reference's rho 1)."""

    score_function: str = "l1_value_loss"
    """Level score (PLR), a registered per-step score: l1_value_loss |GAE|, gae, pvl max(GAE, 0), policy_entropy,
    normalized_policy_entropy (/ log |A|, the reference's), least_confidence, min_margin, one_step_td
    |r + gamma V' (1 - d) - V| (the compiled path's), one_step_td_level_replay |r + V - V'| (the reference's code),
    or one registered with minimax.register_score; or random (uniform over the training levels) or sequential (in
    order), which score nothing."""
    replay_schedule: ReplaySchedule = "proportionate"
    """Replay probability: the seen fraction (proportionate) or --replay-prob (fixed), once the seen fraction >= rho."""
    score_transform: Transform = "rank"
    """Score-to-weight transform of P_S."""
    temperature: float = 0.1
    """Temperature beta of the score transform."""
    greedy_eps: float = 0.05
    """Exploration mass of --score-transform eps_greedy."""
    rho: float = 1.0
    """Seen fraction of the training levels before any replay (the reference's level_replay_rho)."""
    replay_prob: float = 0.5
    """Replay probability of --replay-schedule fixed (the reference's 1 - nu)."""
    score_alpha: float = 1.0
    """Score update: new = (1 - alpha) * old + alpha * observed."""
    staleness_coef: float = 0.1
    """Weight of the staleness distribution P_C in P_replay."""
    staleness_transform: Transform = "power"
    """Staleness-to-weight transform of P_C."""
    staleness_temperature: float = 1.0
    """Temperature of the staleness transform."""
    partial_episodes: PartialEpisodes = "flush"
    """An episode unfinished at a rollout's end: scored on its own after the update (flush, the reference) or
    carried into the next rollout and scored when it ends (carry)."""

    draw: Draw = "auto"
    """How a level is drawn: choice (P_replay recomputed per draw, O(n log n), the reference), tree (P_S and the
    unseen levels in sum trees, rebuilt only when scores change: O(log n) plus O(n) for P_C), auto (tree from
    10,000 levels)."""

    def __post_init__(self):
        check(self, self._rules)

    def _rules(self, c):
        c.positive("temperature", "staleness_temperature")
        c.unit("greedy_eps", "rho", "replay_prob", "staleness_coef")
        if not 0 < self.score_alpha <= 1:
            c.add(f"--score-alpha must be in (0, 1], got {self.score_alpha!r}")
        name = self.score_function
        if name in SCORES and not SCORES[name].from_steps_alone:
            c.add(f"--score-function {name} needs what a host run's level sampler does not keep (a level's best "
                  f"return, its optimum, successes, or a whole-level score); choose from "
                  f"{', '.join(host_scores() + UNSCORED)}")
        elif name not in SCORES and name not in UNSCORED:
            c.add(f"--score-function must be one of {', '.join(host_scores() + UNSCORED)}, got {name!r}")

    @property
    def scored(self) -> bool:
        return self.score_function not in UNSCORED


class LevelSampler:
    """The reference `LevelSampler`'s state and decisions (see the module docstring)."""

    def __init__(self, seeds, num_actors: int, cfg: SamplerConfig, rng_seed: int = 0):
        seeds = np.asarray(seeds, np.int64).reshape(-1)
        if seeds.size == 0 or np.unique(seeds).size != seeds.size:
            raise ValueError(f"the training levels must be distinct and at least one, got {seeds.size} "
                             f"({np.unique(seeds).size} distinct)")
        self.cfg, self.seeds, self.num_actors = cfg, seeds, int(num_actors)
        self.index = {int(s): i for i, s in enumerate(seeds)}
        n = seeds.size
        self.scores = np.zeros(n)
        self.seen = np.zeros(n, bool)
        self.staleness = np.zeros(n)
        self.next_sequential = 0
        self.partial_index = np.full(self.num_actors, -1, np.int64)   # the level of each actor's open segment
        self.partial_score = np.zeros(self.num_actors)
        self.partial_steps = np.zeros(self.num_actors, np.int64)
        self.rng = np.random.default_rng(rng_seed)
        self.use_tree = cfg.draw == "tree" or (cfg.draw == "auto" and n >= TREE_FROM)
        self._score_tree = self._unseen_tree = None   # built on demand, dropped when scores change

    # ------------------------------------------------------------------ the distribution

    def _masked(self, values, transform, temperature):
        everything = np.ones(values.shape, bool)
        w = transform_weights(values, everything, transform, temperature, self.cfg.greedy_eps, ties="ordinal", xp=np)
        return normalize(w * self.seen, self.seen, np) if self.seen.any() else w * 0

    def sample_weights(self) -> np.ndarray:
        """float64[n]: P_replay over the training levels (zero on unseen ones while any is seen)."""
        cfg = self.cfg
        weights = self._masked(self.scores, cfg.score_transform, cfg.temperature)
        if cfg.staleness_coef > 0:
            stale = self._masked(self.staleness, cfg.staleness_transform, cfg.staleness_temperature)
            weights = (1 - cfg.staleness_coef) * weights + cfg.staleness_coef * stale
        return weights

    @property
    def seen_fraction(self) -> float:
        return float(self.seen.mean())

    # ------------------------------------------------------------------ sampling

    def _drawn(self, i: int) -> int:
        if self.cfg.staleness_coef > 0:
            self.staleness += 1
            self.staleness[i] = 0
        return int(self.seeds[i])

    def sample(self) -> int:
        """The next level for an env whose episode just ended (one reference `sample()` call)."""
        cfg, n = self.cfg, self.seeds.size
        if cfg.score_function == "random":
            return int(self.seeds[self.rng.integers(n)])
        if cfg.score_function == "sequential":
            return self.sample_sequential()
        return self.sample_replay() if self.replay_decision() else self.sample_new()

    def replay_decision(self) -> bool:
        """Whether the next level is a replay, by the replay schedule (the reference's
        `sample_replay_decision`); always once every level is seen. Robust PLR takes it once per rollout."""
        cfg, seen = self.cfg, self.seen_fraction
        if cfg.replay_schedule == "fixed":
            replay = seen >= cfg.rho and (self.rng.random() > 1.0 - cfg.replay_prob or seen >= 1.0)
        else:
            replay = seen >= cfg.rho and self.rng.random() < seen
        return bool(replay or seen >= 1.0)

    def sample_replay(self) -> int:
        """A level drawn from `P_replay` (the reference's `_sample_replay_level`)."""
        return self._drawn(self._draw_tree() if self.use_tree else self._draw_choice())

    def sample_new(self) -> int:
        """A level uniform over the unseen ones (the reference's `_sample_unseen_level`); a replay once
        every level is seen."""
        if self.seen.all():
            return self.sample_replay()
        if self.use_tree:
            if self._unseen_tree is None:
                self._unseen_tree = SumTree.from_weights((~self.seen).astype(float))
            return self._drawn(int(self._unseen_tree.sample(self.rng, 1)[0]))
        unseen = np.flatnonzero(~self.seen)
        return self._drawn(int(unseen[self.rng.integers(unseen.size)]))

    def _draw_choice(self) -> int:
        p = self.sample_weights()
        total = p.sum()
        n = p.size
        return int(self.rng.choice(n, p=p / total if total > 0 else np.full(n, 1.0 / n)))

    def _draw_tree(self) -> int:
        """A draw from `(1 - rho) P_S + rho P_C` as a draw of the component, then of a level in it: P_S
        from a sum tree built once per score change, P_C by one pass over the staleness weights."""
        cfg = self.cfg
        if not self.seen.any():
            return self._draw_choice()
        if cfg.staleness_coef > 0 and self.rng.random() < cfg.staleness_coef:
            w = self._masked(self.staleness, cfg.staleness_transform, cfg.staleness_temperature)
            return int(min(np.searchsorted(np.cumsum(w), self.rng.random() * w.sum(), side="right"), w.size - 1))
        if self._score_tree is None:
            self._score_tree = SumTree.from_weights(self._masked(self.scores, cfg.score_transform, cfg.temperature))
        return int(self._score_tree.sample(self.rng, 1)[0])

    def sample_sequential(self) -> int:
        """The levels in order, cycling (the reference's first level of every env, before any score)."""
        i = self.next_sequential
        self.next_sequential = (i + 1) % self.seeds.size
        return int(self.seeds[i])

    # ------------------------------------------------------------------ scores

    def _commit(self, i: int, score: float):
        if self._unseen_tree is not None and not self.seen[i]:
            self._unseen_tree.update(i, 0.0)
        self._score_tree = None
        self.seen[i] = True
        self.scores[i] = (1 - self.cfg.score_alpha) * self.scores[i] + self.cfg.score_alpha * score

    def update_with_rollout(self, levels, dones, terms):
        """Score the episodes of a rollout. `levels int64[T, N]`: the level each transition was played
        in; `dones bool[T, N]`: transition t ended its episode; `terms float[T, N]`: the score's
        per-step terms (`step_score_terms`). Finished episodes are committed in the reference's
        order (env by env, in time); each env's unfinished tail is kept for `after_update`."""
        if not self.cfg.scored:
            return
        levels, dones, terms = np.asarray(levels), np.asarray(dones, bool), np.asarray(terms, np.float64)
        steps = levels.shape[0]
        for actor in range(levels.shape[1]):
            ends = np.flatnonzero(dones[:, actor])
            start = 0
            for end in [*ends, steps - 1]:
                if start > end or start >= steps:
                    break
                i = self.index[int(levels[start, actor])]
                score, n = self._segment_score(terms[start:end + 1, actor])
                if self.cfg.partial_episodes == "carry" and self.partial_index[actor] == i:
                    score, n = self._merge(actor, score, n)
                if dones[end, actor]:
                    self._commit(i, score)
                    self.partial_index[actor], self.partial_score[actor], self.partial_steps[actor] = -1, 0.0, 0
                else:
                    self.partial_index[actor], self.partial_score[actor], self.partial_steps[actor] = i, score, n
                start = end + 1

    def _segment_score(self, terms):
        if self.cfg.score_function == "one_step_td_level_replay":
            # The reference's td term spans t and t + 1, so a segment of n steps has n - 1 of them.
            return (float(np.mean(terms[:-1])) if terms.size > 1 else 0.0), terms.size
        return float(np.mean(terms)), terms.size

    def _merge(self, actor, score, n):
        old, m = self.partial_score[actor], self.partial_steps[actor]
        return old + (score - old) * n / float(m + n), m + n

    def after_update(self):
        """After the PPO update: under `flush`, commit each env's unfinished segment (if its score is
        nonzero, as the reference) and forget it."""
        if self.cfg.partial_episodes != "flush":
            return
        for actor in range(self.num_actors):
            if self.partial_index[actor] >= 0 and self.partial_score[actor] != 0:
                self._commit(int(self.partial_index[actor]), float(self.partial_score[actor]))
        self.partial_index[:], self.partial_score[:], self.partial_steps[:] = -1, 0.0, 0

    # ------------------------------------------------------------------ checkpoints

    def state_dict(self) -> dict:
        return {"seeds": self.seeds.copy(), "scores": self.scores.copy(), "seen": self.seen.copy(),
                "staleness": self.staleness.copy(), "next_sequential": self.next_sequential,
                "partial_index": self.partial_index.copy(), "partial_score": self.partial_score.copy(),
                "partial_steps": self.partial_steps.copy(), "rng": self.rng.bit_generator.state}

    def load_state_dict(self, state: dict):
        if not np.array_equal(np.asarray(state["seeds"]), self.seeds):
            raise ValueError("the checkpoint's sampler was made for other training levels "
                             f"({len(state['seeds'])} levels) than this run's ({self.seeds.size})")
        for name in ("scores", "seen", "staleness", "partial_index", "partial_score", "partial_steps"):
            setattr(self, name, np.array(state[name], dtype=getattr(self, name).dtype))
        self.next_sequential = int(state["next_sequential"])
        self._score_tree = self._unseen_tree = None
        self.rng.bit_generator.state = state["rng"]

    def stats(self) -> dict:
        """Numbers for the logs: the seen fraction, the score spread and how concentrated P_replay is."""
        p = self.sample_weights()
        entropy = float(-(p[p > 0] * np.log(p[p > 0])).sum()) if p.sum() > 0 else 0.0
        seen = self.scores[self.seen]
        return {"sampler/seen_fraction": self.seen_fraction, "sampler/replay_entropy": entropy,
                "sampler/mean_score": float(seen.mean()) if seen.size else 0.0,
                "sampler/max_score": float(seen.max()) if seen.size else 0.0}
