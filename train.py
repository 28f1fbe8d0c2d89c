"""Train a student on AMaze: `python train.py` (domain randomisation), `python train.py --help`."""

import sys

from minimax.devices import DeviceError, join_hosts

if __name__ == "__main__":
    try:
        join_hosts(sys.argv[1:])  # multi-host runs: before anything starts JAX's backend
    except DeviceError as e:
        print(f"error: {e}", file=sys.stderr)
        raise SystemExit(2) from None
    from minimax.train_cli import main

    main()
