"""Environments: the gymnax-style API with levels as first-class values, and AMaze."""

from minimax.envs.environment import Box, Dict, Discrete, Environment
from minimax.envs.wrappers import GenerateAutoReset, ReplayAutoReset, Wrapper

__all__ = ["Box", "Dict", "Discrete", "Environment", "GenerateAutoReset", "ReplayAutoReset", "Wrapper"]
