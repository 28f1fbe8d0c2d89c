"""PLR cycles that keep their levels for several PPO updates (`--cycle-updates K`): meta-RL trials.

SFL's XLand protocol (their `train_meta_task_ued.py`, the PLR row of their table) plays a batch of
rulesets as one trial of 4,096 steps split into 128 PPO updates of 32 steps. The replay decision is
made once per trial, for the whole batch; the recurrent state and the episodes continue across the
trial's updates; the levels are scored once, at the trial's end, over every step of it (MaxMC over
every episode the trial finished), and only then offered to the buffer (new levels) or updated in it
(replays). With `--cycle-updates K` plain and robust PLR (`robust_plr.py`) run this cycle: a trial is
K steps of the runner, each one PPO update of `--num-steps` steps, trained as the method trains
(plain PLR on every update, robust PLR on a replayed trial's only). K = 1 is the one-update cycle,
and its state is `PLRState`, without the trial (`PLRTrialState`), so its checkpoints restore as before.

What the score sees is the trial's record, time-major `[K x T, n]`: the rewards, the values, the ends
and successes of its episodes (inside a meta-RL trial, `envs/trials.py`, the trial's own episodes,
`Rollout.episode_ends`; else the env's), each update's GAE advantages (SFL keeps them so too) and
the policy. It is written an update at a time and scored as one rollout by the run's score function
(`plr_parts.score`), the code a one-update cycle runs; the record costs K times one rollout's score
inputs (SFL's script keeps the trial's whole transitions). Where `--num-steps` x K is the trial's
length (`xland_plr`), the record is exactly one trial.

One difference from SFL's script, kept for every PLR run alike: MaxMC's max return is the best of the
stored one and this trial's (the minimax release's and jaxued's maze PLR); SFL's XLand script scores
a replay against this trial's best alone. Not supported with K > 1, each refused at config time
(`plr_method.py`): a finite training set (`--train-levels`), PACE (its score is one update's), and
the methods that write their own cycle (ACCEL, the parallel ones, CENIE, TRACED, ReMiDi).
"""

from __future__ import annotations

import dataclasses
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
from flax import struct

from minimax.envs.wrappers import tree_select
from minimax.runners.branches import cond_or_zeros
from minimax.runners.plr_family import PLRState
from minimax.runners.plr_parts import (Played, cycle_keys, finish, new_levels, optimal_facts, played_groups,
                                       replay_or_count, score_and_offer, train, where_stored)
from minimax.runners.rollout import EnvStream, Rollout, continue_levels, ppo_batch, start_levels
from minimax.curricula.scores import episode_sums, previous_end


@struct.dataclass
class TrialRecord:
    """What a trial's score reads, `[K x T, n]`, written an update at a time."""

    rewards: jax.Array      # float32, unscaled
    values: jax.Array       # float32
    ends: jax.Array         # bool: an episode ended with this step (a meta-RL trial's own episodes)
    solves: jax.Array       # bool: ...with a success
    advantages: jax.Array   # float32: the GAE of the update the step belongs to
    policy: Any             # the policy's action distributions


@struct.dataclass
class Trial:
    """The levels of the trial in progress and where it stands (a device's part: per-device state)."""

    levels: Any
    slots: jax.Array        # int32[n]: the buffer slot each level is played as (-1: not stored)
    repeat: jax.Array       # bool[n]: a repeat of an earlier level of the batch (played, not offered)
    first: jax.Array        # int32: the first of its repeats in the (gathered) batch
    replay: jax.Array       # bool: the trial replays buffer levels
    phase: jax.Array        # int32: the trial's updates done; 0: the next step starts a new trial
    stream: EnvStream       # the episodes in progress
    record: TrialRecord


@struct.dataclass
class PLRTrialState(PLRState):
    """A PLR state with a cycle of K > 1 updates in progress (a K = 1 run's state is `PLRState`, as it was before
    cycles existed, so that its checkpoints restore)."""

    trial: Trial = None


def with_trial(state: PLRState, trial: Trial) -> PLRTrialState:
    """`state`'s fields with `trial` as the cycle in progress."""
    return PLRTrialState(**{f.name: getattr(state, f.name) for f in dataclasses.fields(PLRState)}, trial=trial)


class _Batch(NamedTuple):
    advantages: jax.Array   # what `plr_parts.score` reads of a PPO batch


def begin_trial(run, buffer, levels, replayed, replay, record: TrialRecord) -> Trial:
    """A trial of `levels` (slots `replayed` >= 0 where drawn from the buffer) at its first step."""
    slots, repeat, first = where_stored(run, buffer, levels, replayed)
    stream = start_levels(run.env, run.env_params, levels, run.model.initial_carry(run.n))
    return Trial(levels=levels, slots=slots, repeat=repeat, first=first, replay=jnp.asarray(replay, bool),
                 phase=jnp.zeros((), jnp.int32), stream=stream, record=record)


def empty_trial(run, buffer, params) -> Trial:
    """The state's trial before the first step (which begins a real one): the buffer's first (placeholder) level on
    every env and a zero record."""
    n = run.n
    levels = jax.tree.map(lambda x: jnp.broadcast_to(x[0], (n,) + x.shape[1:]), buffer.levels)
    stream = start_levels(run.env, run.env_params, levels, run.model.initial_carry(n))  # shapes only
    one_step = jax.tree.map(lambda x: x[None], stream.obs)
    policy = jax.eval_shape(run.model.apply, params, stream.carry, one_step, stream.reset[None])[1]  # [1, n, ...]
    length = run.cur.cycle_updates * run.num_steps
    zeros = lambda dtype: jnp.zeros((length, n), dtype)  # noqa: E731
    record = TrialRecord(rewards=zeros(jnp.float32), values=zeros(jnp.float32), ends=zeros(bool), solves=zeros(bool),
                         advantages=zeros(jnp.float32),
                         policy=jax.tree.map(lambda s: jnp.zeros((length,) + s.shape[1:], s.dtype), policy))
    return begin_trial(run, buffer, levels, None, False, record)


def write_record(record: TrialRecord, rollout: Rollout, batch, phase) -> TrialRecord:
    """`record` with the update `phase`'s steps written in."""
    ends = rollout.dones if rollout.episode_ends is None else rollout.episode_ends
    solves = rollout.solved if rollout.episode_solves is None else rollout.episode_solves
    update = TrialRecord(rewards=rollout.rewards, values=rollout.values, ends=ends, solves=solves,
                         advantages=batch.advantages, policy=rollout.policy)
    at = phase * rollout.rewards.shape[0]
    return jax.tree.map(lambda whole, part: jax.lax.dynamic_update_slice_in_dim(whole, part.astype(whole.dtype), at, 0),
                        record, update)


def trial_played(run, trial: Trial, last_value) -> Played:
    """The whole trial as one played batch, for `plr_parts.score_and_offer` and `played_groups`: its episodes are
    the record's (returns and lengths summed from their starts in the trial); `last_value` is the value after the
    trial's last step."""
    rec = trial.record
    previous = previous_end(rec.ends)
    returns = jnp.where(rec.ends, episode_sums(rec.rewards, previous), 0.0)
    lengths = jnp.where(rec.ends, jnp.arange(rec.ends.shape[0])[:, None] - previous, 0)
    rollout = Rollout(obs=None, reset=None, actions=None, log_probs=None, policy=rec.policy, values=rec.values,
                      rewards=rec.rewards, dones=rec.ends, solved=rec.solves, truncated=None, episode_returns=returns,
                      episode_lengths=lengths.astype(jnp.int32), episode_stats={}, init_carry=None,
                      last_value=last_value)
    return Played(trial.levels, trial.slots, trial.repeat, trial.first, rollout, _Batch(rec.advantages),
                  *optimal_facts(run, trial.levels))


def trial_cycle(run, state: PLRState, replay):
    """One step of a K-update cycle (see the module docstring): a trial begins where `state.trial.phase` is 0 (its
    levels replayed or new as `replay` says, the staleness clock advanced as a one-update cycle advances it), plays
    `--num-steps` more steps, trains where the method trains on `replay`, and at its K-th step is scored and offered.
    `replay` is the trial's decision (`replay_decision` keeps the one its first step drew)."""
    n, keys, trial = run.n, cycle_keys(state.key), state.trial
    starts = trial.phase == 0
    _, new = new_levels(run, keys.new, state.training_set, n)
    drawn, idx, levels = replay_or_count(run, keys.sample, replay, state.buffer, n, new, run.replay_distribution(state))
    trial = tree_select(starts, begin_trial(run, drawn, levels, idx, replay, trial.record), trial)
    buffer = tree_select(starts, drawn, state.buffer)
    ts = state.train_state
    rollout, stream = continue_levels(keys.rollout, run.env, run.env_params, ts.apply_fn, ts.params, trial.stream,
                                      run.num_steps, run.shard, run.ppo.unroll)
    batch = ppo_batch(rollout, run.ppo)
    trains = run.trains_on(replay)
    train_state, metrics = train(run, keys.update, ts, batch, trains)
    phase = trial.phase + 1
    trial = trial.replace(stream=stream, record=write_record(trial.record, rollout, batch, trial.phase),
                          phase=phase % run.cur.cycle_updates)

    def close(buffer):
        played = trial_played(run, trial, rollout.last_value)
        buffer, _, scored = score_and_offer(run, buffer, played, ts, replay | ~played.repeat)
        return buffer, played_groups(run, replay, played, scored)

    buffer, groups = cond_or_zeros(phase == run.cur.cycle_updates, close, buffer)
    metrics.update(groups)
    state, metrics = finish(run, state, train_state, buffer, state.training_set, keys.next, metrics, rollout, replay,
                            trains, run.num_envs * run.num_steps)
    return with_trial(state, trial), metrics


def trial_replay_decision(run, state: PLRState, coin):
    """The replay decision of the next step: `coin` (the method's own, drawn each step) where a trial begins, else
    the decision of the trial in progress."""
    return jnp.where(state.trial.phase == 0, coin, state.trial.replay)
