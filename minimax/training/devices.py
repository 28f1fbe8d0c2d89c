"""Seeds and devices: how one compiled program trains S seeds on D devices (and H hosts).

The run state of S > 1 seeds has a leading seed axis and the runner's `init` and `step` are
`vmap`ped over it. With D > 1 devices the program is a `jax.shard_map` over a 2-D mesh
`(seed, data)` from `jax.make_mesh`: seeds are split over the `seed` axis (gcd(S, D)
devices: independent seeds need no communication) and the env batch over the `data` axis
(the remaining devices), where the runner averages gradients with `lax.pmean`. State
fields a runner keeps per device (`runner.local_fields`: DR's env streams, PLR's per-device
buffers) carry a device axis after the seed axis in the global state; everything else is
replicated over `data`. Several hosts form one mesh after `jax.distributed.initialize`.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P

from minimax.core.parallel import NO_SHARD, Shard
from minimax.runners.base import Runner

DATA_AXIS, SEED_AXIS = "data", "seed"


class DeviceError(ValueError):
    """A device layout cannot work (too many devices, indivisible batch...)."""


def initialize_distributed(coordinator_address: str = "", num_processes: int = 0, process_id: int = -1) -> bool:
    """Join a multi-host run when one is configured (flags, else JAX_COORDINATOR_ADDRESS,
    JAX_NUM_PROCESSES, JAX_PROCESS_ID); returns whether this is a multi-process run."""
    address = coordinator_address or os.environ.get("JAX_COORDINATOR_ADDRESS", "")
    if not address:
        return False
    n = num_processes or int(os.environ.get("JAX_NUM_PROCESSES", "0"))
    pid = process_id if process_id >= 0 else int(os.environ.get("JAX_PROCESS_ID", "-1"))
    if n < 1 or not 0 <= pid < n:
        raise DeviceError(f"multi-host run at {address}: need --num-processes >= 1 and 0 <= --process-id < "
                          f"--num-processes (got {n} and {pid}; or set JAX_NUM_PROCESSES / JAX_PROCESS_ID)")
    if jax.distributed.is_initialized():
        return True
    # (On CPU, cross-process collectives use gloo, JAX's default.)
    ids = node_devices(dict(os.environ))
    jax.distributed.initialize(coordinator_address=address, num_processes=n, process_id=pid,
                               **({} if ids is None else {"local_device_ids": ids}))
    return True


def node_devices(env: dict, nvidia: str = "/proc/driver/nvidia/gpus") -> list[int] | None:
    """The accelerators a task of a SLURM job uses: every GPU of its node when it is the node's only task (what
    docs/scale.md lays out), None otherwise (JAX's own choice: one device per task, `[SLURM_LOCALID]`).

    Why: with any argument of `jax.distributed.initialize` left None, JAX reads SLURM's variables and sets the
    task's devices to `[SLURM_LOCALID]`, i.e. one GPU per task: with one task per node, a run on 2 nodes of 8 GPUs
    would train on 2 of them without a word. The node's GPUs are those SLURM made visible (`CUDA_VISIBLE_DEVICES`)
    or, without that variable, those the driver lists."""
    if "SLURM_JOB_ID" not in env:
        return None
    per_node = env.get("SLURM_NTASKS_PER_NODE") or env.get("SLURM_TASKS_PER_NODE", "").split("(")[0]
    if per_node.split(",")[0].strip() != "1":
        return None
    visible = env.get("CUDA_VISIBLE_DEVICES")
    if visible is not None:
        count = len([d for d in visible.split(",") if d.strip()])
    else:
        count = len(os.listdir(nvidia)) if os.path.isdir(nvidia) else 0
    return list(range(count)) if count else None


@dataclass(frozen=True)
class DeviceLayout:
    """`seeds` trained on a `(seed_devices, data_devices)` mesh (`mesh` None: one device)."""

    seeds: tuple[int, ...]
    seed_devices: int = 1
    data_devices: int = 1
    mesh: object = None

    @property
    def multi_seed(self) -> bool:
        return len(self.seeds) > 1

    @property
    def devices(self) -> int:
        return self.seed_devices * self.data_devices

    @property
    def shard(self) -> Shard:
        return Shard(DATA_AXIS, self.data_devices) if self.data_devices > 1 else NO_SHARD

    def replicated_spec(self):
        return P(SEED_AXIS) if self.multi_seed else P()

    def local_spec(self):
        return P(SEED_AXIS, DATA_AXIS) if self.multi_seed else P(DATA_AXIS)

    def sharding(self, spec) -> NamedSharding:
        return NamedSharding(self.mesh, spec)


def plan_layout(seeds, devices: int = 0, num_envs: int | None = None, buffer_size: int | None = None,
                mutation_subsample: int = 0, other_splits: tuple = ()) -> DeviceLayout:
    """The mesh for `seeds` on `devices` devices (0 = all), checked against the batch sizes
    that must split evenly over the data axis (`other_splits`: more `(flag, value)` pairs, e.g.
    SFL's sampled batch); errors say what to change."""
    available = jax.devices()
    d = devices or len(available)
    if d > len(available):
        raise DeviceError(f"--devices {d}: only {len(available)} device(s) available "
                          f"({jax.default_backend()}); use --devices {len(available)} or fewer (on CPU, "
                          f"XLA_FLAGS=--xla_force_host_platform_device_count=N makes N devices)")
    seeds = tuple(seeds)
    if d == 1:
        return DeviceLayout(seeds)
    seed_devices = math.gcd(len(seeds), d)
    data_devices = d // seed_devices
    for name, value in (("--num-envs", num_envs), ("--buffer-size", buffer_size),
                        ("--mutation-subsample", mutation_subsample), *other_splits):
        if value and value % data_devices:
            raise DeviceError(f"{name} ({value}) must be divisible by the {data_devices} devices the env batch is "
                              f"split over (--devices {d} with {len(seeds)} seed(s)); change {name} or --devices")
    # Auto axes: jit places inputs (keys, restored states) as the shard_map specs ask.
    auto = (jax.sharding.AxisType.Auto,) * 2
    mesh = jax.make_mesh((seed_devices, data_devices), (SEED_AXIS, DATA_AXIS), axis_types=auto, devices=available[:d])
    return DeviceLayout(seeds, seed_devices, data_devices, mesh)


def _device_axis(layout: DeviceLayout) -> int:
    return 1 if layout.multi_seed else 0


def _state_specs(runner: Runner, layout: DeviceLayout):
    """A spec per top-level state field (a prefix of the state pytree)."""
    fields = {f: (layout.local_spec() if f in runner.local_fields else layout.replicated_spec())
              for f in runner.state_type.__dataclass_fields__}
    return runner.state_type(**fields)


def _map_local(state, runner: Runner, fn):
    local = runner.local_fields
    return state.replace(**{f: jax.tree.map(fn, getattr(state, f)) for f in local}) if local else state


def split_seed_key(key):
    """`(init key, eval key)` of a seed's root key (`jax.random.key(seed)`): the run state starts
    from the first (`runner.init`), the loop's periodic evaluation draws from the second. The loop
    (`loop.seed_keys`) and `make_train` both derive them here, so a seed trains the same either way."""
    init_key, eval_key = jax.random.split(key)
    return init_key, eval_key


def distribute_init(runner: Runner, layout: DeviceLayout):
    """`keys -> state`: `runner.init` per seed (keys `[S]`, or one key), on the layout's devices.

    Seeds are vmapped like the steps: the models' orthogonal initialisers draw one QR per seed
    under `vmap` (`models/initializers.py`: jaxlib 0.10's batched QR deadlocks XLA:CPU), so the
    values equal those of each seed initialised alone."""
    init = jax.vmap(runner.init) if layout.multi_seed else runner.init
    if layout.mesh is None:
        return init
    axis = _device_axis(layout)

    def inner(keys):
        return _map_local(init(keys), runner, lambda x: jnp.expand_dims(x, axis))

    return jax.shard_map(inner, mesh=layout.mesh, in_specs=(layout.replicated_spec(),),
                         out_specs=_state_specs(runner, layout), check_vma=False)


def distribute_step(fn, runner: Runner, layout: DeviceLayout, with_hp: bool = False):
    """`fn(state, ahead) -> (state, metrics)` of one seed on one device (`budget.make_chunk`) -> the
    same for every seed (vmap) on every device (shard_map); metrics come out per seed, equal on all
    devices. `ahead` (int32 per seed, `[S]` or a scalar) may be left out: zeros. `with_hp`: `fn` is
    `fn(state, ahead, hp)`, `hp` the traced options' values per seed (`config/hyperparams.py`), vmapped
    and replicated like `ahead`; the result then takes `(state, ahead, hp)`."""
    f = jax.vmap(fn) if layout.multi_seed else fn
    zeros = jnp.zeros((len(layout.seeds),) if layout.multi_seed else (), jnp.int32)
    run = f if layout.mesh is None else _shard_step(f, runner, layout)

    def train_chunk(state, ahead=None, hp=None):  # the name XLA's dumps, profiles and cache logs show
        ahead = zeros if ahead is None else ahead
        return run(state, ahead, {} if hp is None else hp) if with_hp else run(state, ahead)
    return train_chunk


def _shard_step(f, runner: Runner, layout: DeviceLayout):
    """`f(state, ahead, *hp)` of one device's part, over the layout's mesh (local fields split, the rest
    replicated)."""
    axis = _device_axis(layout)

    def inner(state, *rest):
        state = _map_local(state, runner, lambda x: jnp.squeeze(x, axis))
        state, metrics = f(state, *rest)
        return _map_local(state, runner, lambda x: jnp.expand_dims(x, axis)), metrics

    specs = _state_specs(runner, layout)
    rep = layout.replicated_spec()

    def sharded(state, *rest):
        return jax.shard_map(inner, mesh=layout.mesh, in_specs=(specs,) + (rep,) * len(rest),
                             out_specs=(specs, rep), check_vma=False)(state, *rest)
    return sharded


def committed(state):
    """`state` with every array committed to the device(s) it is on, as a restored checkpoint's are.

    A fresh single-device state comes out of `init` uncommitted, a restored one committed (Orbax puts it
    on a device). `jit` lowers the two differently (whether a program's parameters may take a propagated
    sharding), so a resumed run compiled its programs again instead of loading the fresh run's from the
    compilation cache: a second compile of every program on every resume (15 s of a 2-seed CENIE test's
    100 s on CPU). Committed both ways, the programs are identical. The compiled loop and the host path
    both commit a fresh state."""
    return jax.tree.map(lambda x: x if x.committed else jax.device_put(x, x.sharding), state)


def to_host(tree):
    """Numpy copies of (possibly multi-host) arrays on every process. Every process must call it."""
    if jax.process_count() > 1:
        from jax.experimental import multihost_utils  # noqa: PLC0415

        return multihost_utils.process_allgather(tree, tiled=True)
    return jax.device_get(tree)


def seed_params(params, layout: DeviceLayout) -> list:
    """Host copies of each seed's parameters (slices of the seed axis when there is one)."""
    host = to_host(params)
    if not layout.multi_seed:
        return [host]
    return [jax.tree.map(lambda x, i=i: np.asarray(x[i]), host) for i in range(len(layout.seeds))]
