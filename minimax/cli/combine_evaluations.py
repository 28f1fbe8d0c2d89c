"""`python -m minimax.cli.combine_evaluations EVAL_A EVAL_B ... --out DIR`: one table, with the aggregates and
every probability of improvement, from several `evaluate.py` calls' outputs (`minimax.evaluation.combine`)."""

from __future__ import annotations

import sys
from dataclasses import dataclass

import tyro

from minimax.evaluation.combine import CombineError, combine_evaluations


@dataclass(frozen=True)
class CombineConfig:
    """Combine evaluate.py outputs scored under the same settings into one table."""

    evaluations: tyro.conf.Positional[tuple[str, ...]]
    """Output directories (or results.json files) of evaluate.py calls."""
    out: str
    """Directory for the combined results.json, per_run.csv, summary.csv and aggregates.csv."""


def main(argv: list[str] | None = None) -> None:
    args = tyro.cli(CombineConfig, args=list(sys.argv[1:] if argv is None else argv),
                    prog="python -m minimax.cli.combine_evaluations", description=CombineConfig.__doc__)
    try:
        combine_evaluations(args.evaluations, args.out)
    except CombineError as e:
        print(f"error: {e}", file=sys.stderr)
        raise SystemExit(2) from None
    print(f"combined results written to {args.out}", file=sys.stderr)


if __name__ == "__main__":
    main()
