"""Classic control with the physics as the level: CartPole and Pendulum on gymnax's dynamics.

Each env's level is its physical parameters plus a start state (float32 scalars), drawn by a
generator from documented ranges, perturbed by an ACCEL mutator within them, and evaluated on
held-out grids that reach outside them. The transitions are gymnax's own `step_env`; the time
limit and the `terminated` / `truncated` / `solved` flags are ours (see each module).
"""

from minimax.envs.classic.cartpole import (
    CARTPOLE_RANGES, CartPole, CartPoleLevel, CartPoleParams, CartPoleRanges, CartPoleState, cartpole_held_out,
    cartpole_level, make_cartpole_generator, make_cartpole_mutator,
)
from minimax.envs.classic.cartpole import MUTATORS as CARTPOLE_MUTATORS
from minimax.envs.classic.cartpole import SUITES as CARTPOLE_SUITES
from minimax.envs.classic.cartpole import level_metrics as cartpole_level_metrics
from minimax.envs.classic.pendulum import (
    PENDULUM_RANGES, Pendulum, PendulumLevel, PendulumParams, PendulumRanges, PendulumState, make_pendulum_generator,
    make_pendulum_mutator, pendulum_held_out, pendulum_level,
)
from minimax.envs.classic.pendulum import MUTATORS as PENDULUM_MUTATORS
from minimax.envs.classic.pendulum import SUITES as PENDULUM_SUITES
from minimax.envs.classic.pendulum import level_metrics as pendulum_level_metrics

__all__ = [
    "CartPole", "CartPoleLevel", "CartPoleParams", "CartPoleRanges", "CartPoleState", "CARTPOLE_RANGES",
    "CARTPOLE_MUTATORS", "CARTPOLE_SUITES", "cartpole_level", "make_cartpole_generator", "make_cartpole_mutator",
    "cartpole_held_out", "cartpole_level_metrics",
    "Pendulum", "PendulumLevel", "PendulumParams", "PendulumRanges", "PendulumState", "PENDULUM_RANGES",
    "PENDULUM_MUTATORS", "PENDULUM_SUITES", "pendulum_level", "make_pendulum_generator", "make_pendulum_mutator",
    "pendulum_held_out", "pendulum_level_metrics",
]
