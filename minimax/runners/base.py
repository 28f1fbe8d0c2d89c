"""The runner contract every autocurriculum implements, as a `typing.Protocol`.

A runner is one method's whole training step as pure functions of explicit state:

- `init(key) -> state` and `step(state) -> (state, metrics)`, jittable and vmappable: the
  training loop scans `step` inside one compiled program, vmaps it over seeds and wraps it in
  `jax.shard_map` over devices without knowing which method it runs;
- `state_type`: the `flax.struct` dataclass `init` returns (sharding builds one partition spec
  per top-level field of it);
- `local_fields`: the fields of that state that differ per device when the runner is built for
  a data-parallel mesh (DR's env streams, per-device level buffers); every other field is
  replicated. Empty when not sharded;
- `num_envs`, `num_steps`: the global env batch and the rollout length;
- `metrics`: a flat dict of scalars following `minimax.core.metrics`' naming convention, with
  `gradient_updates` (1 for a step that made a PPO update, 0 for one that did not: robust PLR's
  cycles of new levels), `env_steps` and `cycles` (rollout cycles: 1 per step);
- `trains_every_cycle` (optional, default False): every step makes a PPO update, so the update
  budget runs one step per update without its loop (`minimax/training/budget.py`); a runner that may
  idle gives `max_idle_cycles`, the idle steps after which it is stuck;
- `will_train(state)` and `cycle(state, trains)` (optional): a runner that trains on some cycles only
  and can say before a cycle whether it will (robust PLR, ACCEL: the replay coin is a function of the
  state) gets the update unit of `budget.py`, which plays `cycle(state, False)` until `will_train`,
  then `cycle(state, True)`, with `trains` a Python bool, so that a vmapped program never computes
  the update a cycle skips.
"""

from __future__ import annotations

from typing import Any, Protocol, TypeVar, runtime_checkable

State = TypeVar("State")


@runtime_checkable
class Runner(Protocol[State]):
    """What the training loop, sharding and checkpointing rely on (see the module docstring)."""

    state_type: type
    num_envs: int
    num_steps: int

    @property
    def local_fields(self) -> tuple[str, ...]:
        """Top-level state fields that carry a per-device axis in the global state."""

    def init(self, key) -> State:
        """A fresh run state for one seed (on this device)."""

    def step(self, state: State) -> tuple[State, dict[str, Any]]:
        """One rollout cycle (with its gradient update, if it makes one): the next state and its metrics."""
