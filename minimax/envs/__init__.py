"""Environments: the gymnax-style API with levels as first-class values, the registry of UED
environments (`registry.py`, `--env`), and the environments: AMaze (`maze/`), CartPole and
Pendulum (`classic/`), Craftax-Classic (`craftax/`, optional)."""

from minimax.envs.environment import Box, Dict, Discrete, Environment
from minimax.envs.wrappers import GenerateAutoReset, ReplayAutoReset, Wrapper

__all__ = ["Box", "Dict", "Discrete", "Environment", "GenerateAutoReset", "ReplayAutoReset", "Wrapper"]
