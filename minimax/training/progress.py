"""The training progress bar (rich): units of the budget done, env steps, steps per second, the
training return and the time left, in at most 80 columns."""

from __future__ import annotations

import sys
import time


def _clock(seconds: float) -> str:
    seconds = int(seconds)
    return f"{seconds // 3600}:{seconds % 3600 // 60:02d}:{seconds % 60:02d}"


def _short(n: float) -> str:
    """`n` in at most 6 characters: 950, 12.3k, 4.56M, 1.2G (a value that rounds up to 1000 of
    a unit takes the next one: 999,700 is 1M, not 1e+03k)."""
    if abs(n) < 999.5:
        return f"{n:.0f}"
    for unit, size in (("k", 1e3), ("M", 1e6)):
        if abs(n) / size < 999.5:
            return f"{n / size:.3g}{unit}"
    return f"{n / 1e9:.3g}G"


class Progress:
    """A rich progress bar of fixed width (at most 80 columns): units of the budget (`unit`:
    updates, cycles or batches, `budget.LABEL`), env steps, measured steps per second, the
    training return (once an episode finished) and the time left. Where stdout is no terminal (a
    cluster job's log file) a bar would stay silent: one plain line per log row instead."""

    BAR_WIDTH = 12

    def __init__(self, total: int, done: int, env_steps: int, enabled: bool = True, unit: str = "updates"):
        self._bar = None
        self._plain = enabled and not sys.stdout.isatty()
        self._total, self._unit, self._start, self._start_done = total, unit, time.monotonic(), done
        if not enabled or self._plain:
            return
        from rich.progress import BarColumn, MofNCompleteColumn, TextColumn, TimeRemainingColumn  # noqa: PLC0415
        from rich.progress import Progress as RichProgress  # noqa: PLC0415

        self._bar = RichProgress(TextColumn(f"{unit:>7}"), BarColumn(bar_width=self.BAR_WIDTH), MofNCompleteColumn(),
                                 TextColumn("{task.fields[stats]}"), TimeRemainingColumn(), transient=False)
        self._task = self._bar.add_task("train", total=total, completed=done, stats=self.stats(env_steps, None, None))
        self._bar.start()

    @staticmethod
    def stats(env_steps: int, sps: float | None, train_return) -> str:
        """The bar's statistics, always 36 characters wide (no jumping when a value appears)."""
        rate = "-" if sps is None else _short(sps)
        ret = "-" if train_return is None or train_return != train_return else f"{train_return:.3f}"
        return f"{_short(env_steps):>6} steps {rate:>6}/s  return {ret:>6}"

    def advance(self, done: int, env_steps: int, sps: float, train_return) -> None:
        if self._plain:
            elapsed = time.monotonic() - self._start
            left = elapsed / max(done - self._start_done, 1) * (self._total - done)
            print(f"{self._unit} {done}/{self._total} {self.stats(env_steps, sps, train_return)}  "
                  f"elapsed {_clock(elapsed)} left {_clock(left)}", flush=True)
        if self._bar is None:
            return
        self._bar.update(self._task, completed=done, stats=self.stats(env_steps, sps, train_return))

    def close(self) -> None:
        if self._bar is not None:
            self._bar.stop()
