"""`python evaluate.py` / `minimax-evaluate`: score trained runs on held-out levels (`minimax.evaluation.evaluate`)."""

from __future__ import annotations

import sys


def main(argv: list[str] | None = None) -> None:
    from minimax.evaluation.evaluate import main as evaluate_main  # noqa: PLC0415

    evaluate_main(sys.argv[1:] if argv is None else argv)


if __name__ == "__main__":
    main()
