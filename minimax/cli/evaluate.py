"""`python evaluate.py` / `minimax-evaluate`: score trained runs on held-out levels (`minimax.evaluation.evaluate`)."""

from __future__ import annotations

import sys


def main(argv: list[str] | None = None) -> None:
    """Evaluate; `--plugin MODULE_OR_FILE.py` first imports a user's registrations (a run of a plugin
    method or environment reads its config through them), as `train.py --plugin` does."""
    from minimax.cli.train import load_plugins  # noqa: PLC0415
    from minimax.evaluation.evaluate import main as evaluate_main  # noqa: PLC0415

    evaluate_main(load_plugins(list(sys.argv[1:] if argv is None else argv)))


if __name__ == "__main__":
    main()
