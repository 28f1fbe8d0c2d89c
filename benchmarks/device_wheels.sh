#!/usr/bin/env bash
# The wheels a lent GPU machine lacks, downloaded here into wheels/ (git-ignored) to be carried there.
# The device has jax (CUDA), flax, optax, chex and orbax, and no network. Usage:
#   bash benchmarks/device_wheels.sh [PYTHON_VERSION] [core]   # default 3.11 (procgen-mirror: 3.11, 3.12 only)
# `core` leaves out the host path's wheels: procgen-mirror's alone is 46 MB, and with the repository (23 MB in
# 2026-11) it passes the 64 MiB a call carries; the compiled path (gpu_suite.py, gpu_order.sh) needs none of them.
#   run(carry=["wheels"], command="pip install -q --no-deps wheels/*.whl && PYTHONPATH=. python benchmarks/gpu_suite.py")
#   run(carry=["wheels"], command="pip install -q --no-deps wheels/*.whl && PYTHONPATH=. python \
#       benchmarks/procgen_comparison.py --full --seeds 0")   # the PLR paper's Procgen protocol
set -euo pipefail
py="${1:-3.11}"
only="${2:-all}"
rm -rf wheels
mkdir wheels
get() { pip download -q --no-deps --only-binary=:all: --python-version "$py" \
          --platform manylinux2014_x86_64 --platform manylinux_2_17_x86_64 --platform any -d wheels "$@"; }
# Our pure-Python dependencies (pyproject.toml) and theirs (scipy comes with jax). Carry limit: 64 MiB.
get tyro docstring-parser typeguard typing-extensions shtab rich markdown-it-py mdurl pygments six gymnax
# The host path (docs/host_envs.md): procgen without its numpy<2 pins, gym3, cffi, imageio.
[ "$only" = core ] || get procgen-mirror==0.10.7 gym3==0.3.3 cffi pycparser imageio
du -sh wheels
ls wheels
