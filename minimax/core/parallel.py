"""Where a program's envs sit in the global batch: the data-parallel axis of a `shard_map`.

A runner built with `Shard(axis_name, size)` runs inside `jax.shard_map` on its device's
slice of `num_envs / size` envs. It draws per-env randomness from the *global* batch's keys
(`env_keys`), averages gradients and statistics over the axis, and sums counters, so one
update computes the same thing on 1, 2 or 4 devices (up to float summation order). The
default `NO_SHARD` makes every collective a no-op: the same runner code runs unsharded.
"""

from __future__ import annotations

from dataclasses import dataclass

import jax
import jax.numpy as jnp


@dataclass(frozen=True)
class Shard:
    """A data-parallel mesh axis (`axis_name=None`: not sharded)."""

    axis_name: str | None = None
    size: int = 1

    @property
    def sharded(self) -> bool:
        return self.axis_name is not None

    def index(self):
        """This device's position along the axis (0 when not sharded)."""
        return jax.lax.axis_index(self.axis_name) if self.sharded else jnp.zeros((), jnp.int32)

    def local(self, x_global, n_local: int):
        """This device's `n_local` rows of a global `[n_local * size, ...]` array (or pytree)."""
        if not self.sharded:
            return x_global
        start = self.index() * n_local
        return jax.tree.map(lambda x: jax.lax.dynamic_slice_in_dim(x, start, n_local), x_global)

    def env_keys(self, key, n_local: int):
        """Per-env keys: this device's slice of `split(key, global envs)`, so env i of the global
        batch gets the same key whatever the device count."""
        return self.local(jax.random.split(key, n_local * self.size), n_local)

    def device_key(self, key):
        """A key that differs per device (for draws that are per device by design)."""
        return jax.random.fold_in(key, self.index()) if self.sharded else key

    def mean(self, x):
        return jax.lax.pmean(x, self.axis_name) if self.sharded else x

    def sum(self, x):
        return jax.lax.psum(x, self.axis_name) if self.sharded else x

    def max(self, x):
        return jax.lax.pmax(x, self.axis_name) if self.sharded else x

    def all(self, x):
        """Logical and across devices."""
        return jax.lax.pmin(x.astype(jnp.int32), self.axis_name).astype(bool) if self.sharded else x

    def gather(self, x):
        """Concatenate every device's rows (device order) along axis 0; identity unsharded."""
        if not self.sharded:
            return x
        return jax.tree.map(lambda v: jax.lax.all_gather(v, self.axis_name, tiled=True), x)

    def offset(self, count):
        """Sum of `count` over the devices before this one (a global running index)."""
        if not self.sharded:
            return jnp.zeros_like(count)
        counts = jax.lax.all_gather(count, self.axis_name)
        return jnp.sum(jnp.where(jnp.arange(self.size) < self.index(), counts, 0))


NO_SHARD = Shard()
