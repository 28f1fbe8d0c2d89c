"""The main job. Until the training loop lands it runs the AMaze demo: `python train.py --help`."""

from minimax.demo import cli

if __name__ == "__main__":
    cli()
