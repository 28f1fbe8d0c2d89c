"""A line-by-line transcription of facebookresearch/level-replay's `LevelSampler` (numpy in place of
torch, `np.float` as `float`): the distribution and the score bookkeeping our `LevelSampler` must
reproduce. Only what the tests compare is transcribed; the random stream is passed in."""

import numpy as np


class ReferenceLevelSampler:
    def __init__(self, seeds, num_actors=1, strategy="value_l1", replay_schedule="proportionate",
                 score_transform="rank", temperature=0.1, eps=0.05, rho=1.0, nu=0.5, alpha=1.0,
                 staleness_coef=0.1, staleness_transform="power", staleness_temperature=1.0):
        self.strategy, self.replay_schedule = strategy, replay_schedule
        self.score_transform, self.temperature, self.eps = score_transform, temperature, eps
        self.rho, self.nu, self.alpha = rho, nu, alpha
        self.staleness_coef, self.staleness_transform = staleness_coef, staleness_transform
        self.staleness_temperature = staleness_temperature
        self.seeds = np.array(seeds, dtype=np.int64)
        self.seed2index = {seed: i for i, seed in enumerate(seeds)}
        self.unseen_seed_weights = np.array([1.] * len(seeds))
        self.seed_scores = np.array([0.] * len(seeds), dtype=float)
        self.partial_seed_scores = np.zeros((num_actors, len(seeds)), dtype=float)
        self.partial_seed_steps = np.zeros((num_actors, len(seeds)), dtype=np.int64)
        self.seed_staleness = np.array([0.] * len(seeds), dtype=float)

    def update_seed_score(self, actor_index, seed_idx, score, num_steps):
        score = self._partial_update_seed_score(actor_index, seed_idx, score, num_steps, done=True)
        self.unseen_seed_weights[seed_idx] = 0.
        old_score = self.seed_scores[seed_idx]
        self.seed_scores[seed_idx] = (1 - self.alpha) * old_score + self.alpha * score

    def _partial_update_seed_score(self, actor_index, seed_idx, score, num_steps, done=False):
        partial_score = self.partial_seed_scores[actor_index][seed_idx]
        partial_num_steps = self.partial_seed_steps[actor_index][seed_idx]
        running_num_steps = partial_num_steps + num_steps
        merged_score = partial_score + (score - partial_score) * num_steps / float(running_num_steps)
        if done:
            self.partial_seed_scores[actor_index][seed_idx] = 0.
            self.partial_seed_steps[actor_index][seed_idx] = 0
        else:
            self.partial_seed_scores[actor_index][seed_idx] = merged_score
            self.partial_seed_steps[actor_index][seed_idx] = running_num_steps
        return merged_score

    def update_with_rollouts(self, level_seeds, masks, returns, value_preds):
        """`level_seeds [T, N]`, `masks [T + 1, N]` (0 where an episode started), `returns`, `value_preds [T, N]`:
        the reference's `_update_with_rollouts` with `_average_value_l1`."""
        done = ~(masks > 0)
        total_steps, num_actors = level_seeds.shape
        for actor_index in range(num_actors):
            done_steps = done[:, actor_index].nonzero()[0][:total_steps]
            start_t = 0
            for t in done_steps:
                if not start_t < total_steps:
                    break
                if t == 0:
                    continue
                seed_idx_t = self.seed2index[int(level_seeds[start_t, actor_index])]
                score = np.abs(returns[start_t:t, actor_index] - value_preds[start_t:t, actor_index]).mean()
                self.update_seed_score(actor_index, seed_idx_t, score, t - start_t)
                start_t = t
            if start_t < total_steps:
                seed_idx_t = self.seed2index[int(level_seeds[start_t, actor_index])]
                score = np.abs(returns[start_t:, actor_index] - value_preds[start_t:, actor_index]).mean()
                self._partial_update_seed_score(actor_index, seed_idx_t, score, total_steps - start_t)

    def after_update(self):
        for actor_index in range(self.partial_seed_scores.shape[0]):
            for seed_idx in range(self.partial_seed_scores.shape[1]):
                if self.partial_seed_scores[actor_index][seed_idx] != 0:
                    self.update_seed_score(actor_index, seed_idx, 0, 0)
        self.partial_seed_scores.fill(0)
        self.partial_seed_steps.fill(0)

    def _update_staleness(self, selected_idx):
        if self.staleness_coef > 0:
            self.seed_staleness = self.seed_staleness + 1
            self.seed_staleness[selected_idx] = 0

    def sample_weights(self):
        weights = self._score_transform(self.score_transform, self.temperature, self.seed_scores)
        weights = weights * (1 - self.unseen_seed_weights)
        z = np.sum(weights)
        if z > 0:
            weights /= z
        staleness_weights = 0
        if self.staleness_coef > 0:
            staleness_weights = self._score_transform(self.staleness_transform, self.staleness_temperature,
                                                      self.seed_staleness)
            staleness_weights = staleness_weights * (1 - self.unseen_seed_weights)
            z = np.sum(staleness_weights)
            if z > 0:
                staleness_weights /= z
            weights = (1 - self.staleness_coef) * weights + self.staleness_coef * staleness_weights
        return weights

    def _score_transform(self, transform, temperature, scores):
        if transform == "eps_greedy":
            weights = np.zeros_like(scores)
            weights[scores.argmax()] = 1. - self.eps
            weights += self.eps / len(self.seeds)
        elif transform == "rank":
            temp = np.flip(scores.argsort())
            ranks = np.empty_like(temp)
            ranks[temp] = np.arange(len(temp)) + 1
            weights = 1 / ranks ** (1. / temperature)
        elif transform == "power":
            eps = 0 if self.staleness_coef > 0 else 1e-3
            weights = (np.array(scores) + eps) ** (1. / temperature)
        elif transform == "softmax":
            weights = np.exp(np.array(scores) / temperature)
        return weights
