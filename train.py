"""Train a student on AMaze: `python train.py` (domain randomisation), `python train.py --help`."""

from minimax.train import main

if __name__ == "__main__":
    main()
