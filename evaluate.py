"""Score trained runs on held-out mazes: `python evaluate.py runs/<a> runs/<b> --suite dcd12`; `--help`."""

from minimax.cli.evaluate import main

if __name__ == "__main__":
    main()
