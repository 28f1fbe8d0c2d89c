"""minimax: fully-jitted autocurricula (Unsupervised Environment Design) in JAX."""

from minimax import _moved

__version__ = "0.1.0"

_moved.install()
