"""Train a student: `python train.py` (domain randomisation on AMaze), `python train.py --help`."""

from minimax.cli.train import main

if __name__ == "__main__":
    main()
