"""Convert the SFL repository's pickled JaxNav test set to the `.npz` this package ships.

The pickle (amacrutherford/sampling-for-learnability, `sfl/data/test_sets/sampled_tc_100e_1a.pkl`,
Apache-2.0) holds one jaxmarl `EnvInstance` of 100 single-agent levels as jax arrays pickled by an
old jax, whose array reconstructor no longer unpickles (`ShapedArray ... named_shape`). This script
rebuilds every array as numpy, drops the agent axis and writes the four level fields; the reward
weight lambda (1.0 in the pickle) is not kept: minimax plays every JaxNav level with SFL's training
lambda of 0.5, so the observation's last feature is what the student saw in training.

    python minimax/envs/jaxnav/data/convert_sfl_test_set.py sampled_tc_100e_1a.pkl sfl_sampled_100.npz
"""

from __future__ import annotations

import argparse
import pickle

import numpy as np


class _NumpyUnpickler(pickle.Unpickler):
    """Unpickles jax arrays of any jax version as numpy arrays."""

    def find_class(self, module, name):
        if module.startswith("jax") and name == "_reconstruct_array":
            def rebuild(fun, args, arr_state, aval_state):
                arr = fun(*args)
                arr.__setstate__(arr_state)
                return arr
            return rebuild
        return super().find_class(module, name)


def convert(src: str, dst: str) -> None:
    with open(src, "rb") as f:
        inst = _NumpyUnpickler(f).load()
    levels = {
        "agent_pos": np.asarray(inst.agent_pos, np.float32)[:, 0],      # [N, 2] (x, y) in metres
        "agent_theta": np.asarray(inst.agent_theta, np.float32)[:, 0],  # [N]
        "goal_pos": np.asarray(inst.goal_pos, np.float32)[:, 0],        # [N, 2]
        "map_data": np.asarray(inst.map_data, np.int32),                # [N, H, W], 1 = wall
    }
    np.savez_compressed(dst, **levels)
    print({k: v.shape for k, v in levels.items()})


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("src", help="SFL's pickled test set")
    parser.add_argument("dst", help="the .npz to write")
    args = parser.parse_args()
    convert(args.src, args.dst)
