"""minimax: fully-jitted autocurricula (Unsupervised Environment Design) in JAX."""

__version__ = "0.1.0"
