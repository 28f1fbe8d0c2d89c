"""The training progress bar (rich): units of the budget done, env steps, steps per second, the
training return and the time left, in at most 80 columns; while a PLR-family run's level buffer
fills before its first update, how full it is instead (`buffer_filling`)."""

from __future__ import annotations

import sys
import time

import numpy as np

from minimax.core.methods import get_method

Filling = tuple  # (levels held or None when unknown, levels needed before the first update)


def buffer_filling(cfg, runner, counters: dict, rows: list[dict] | None = None) -> Filling | None:
    """`(held, ready)` while the run has made no gradient update yet because its level buffer must
    hold `ready` levels first (robust PLR, ACCEL and the parallel methods: `--min-fill-ratio` x
    `--buffer-size`); `held` is the fullest-known count (the fewest over seeds in `rows`, 0 before a
    fresh run's first chunk, None when unknown). None for a run that trains from its first cycle."""
    if not get_method(cfg.method).level_buffer or getattr(runner, "trains_every_cycle", False):
        return None
    if int(np.min(counters["gradient_updates"])) > 0:
        return None
    sizes = [int(r["buffer/size"]) for r in rows or () if r.get("buffer/size") is not None]
    held = min(sizes) if sizes else (0 if rows is None and not cfg.resume else None)
    per_buffer = getattr(runner, "capacity", cfg.buffer.capacity)  # one buffer per device, or one for all
    return held, cfg.curriculum.ready_at(per_buffer) * max(1, cfg.buffer.capacity // per_buffer)


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

    def __init__(self, total: int, done: int, env_steps: int, enabled: bool = True, unit: str = "updates",
                 filling: Filling | None = None):
        self._bar = None
        self._plain = enabled and not sys.stdout.isatty()
        self._total, self._unit, self._start, self._start_done = total, unit, time.monotonic(), done
        if self._plain and filling is not None:  # a cluster log says why no row comes for a while
            print(f"{unit} {done}/{total} {self.filling_text(*filling)} (a smaller --buffer-size starts "
                  f"sooner)", flush=True)
        if not enabled or self._plain:
            return
        from rich.progress import BarColumn, MofNCompleteColumn, TextColumn, TimeRemainingColumn  # noqa: PLC0415
        from rich.progress import Progress as RichProgress  # noqa: PLC0415

        self._bar = RichProgress(TextColumn(f"{unit:>7}"), BarColumn(bar_width=self.BAR_WIDTH), MofNCompleteColumn(),
                                 TextColumn("{task.fields[stats]}"), TimeRemainingColumn(), transient=False)
        stats = self.stats(env_steps, None, None) if filling is None else self.filling_stats(*filling)
        self._task = self._bar.add_task("train", total=total, completed=done, stats=stats)
        self._bar.start()

    @staticmethod
    def stats(env_steps: int, sps: float | None, train_return) -> str:
        """The bar's statistics, always 36 characters wide (no jumping when a value appears)."""
        rate = "-" if sps is None else _short(sps)
        ret = "-" if train_return is None or train_return != train_return else f"{train_return:.3f}"
        return f"{_short(env_steps):>6} steps {rate:>6}/s  return {ret:>6}"

    @staticmethod
    def filling_text(held: int | None, ready: int) -> str:
        """What a plain line says while the buffer fills: `buffer 123/2000 levels before the first update`."""
        if held is not None and held >= ready:  # robust PLR: the first replay (a draw) makes the first update
            return f"buffer {held}/{ready} levels (ready): the first update comes with the first replay"
        return f"buffer {'?' if held is None else held}/{ready} levels before the first update"

    @staticmethod
    def filling_stats(held: int | None, ready: int) -> str:
        """The bar's statistics while the buffer fills, 36 characters wide like `stats`."""
        if held is not None and held >= ready:
            return f"{'buffer ready, no update yet':<36}"
        text = f"filling buffer {'?' if held is None else held}/{ready} levels"
        if len(text) > 36:
            text = f"filling buffer {'?' if held is None else _short(held)}/{_short(ready)} levels"
        return f"{text:<36}"

    def advance(self, done: int, env_steps: int, sps: float, train_return, filling: Filling | None = None) -> None:
        """`filling` (`buffer_filling`): the buffer's fill, shown instead of the return before the first update."""
        stats = self.stats(env_steps, sps, train_return)
        if self._plain:
            elapsed = time.monotonic() - self._start
            left = elapsed / max(done - self._start_done, 1) * (self._total - done)
            text = (f"{_short(env_steps):>6} steps {self.filling_text(*filling)}" if filling is not None else
                    f"{stats}  elapsed {_clock(elapsed)} left {_clock(left)}")
            print(f"{self._unit} {done}/{self._total} {text}", flush=True)
        if self._bar is None:
            return
        stats = stats if filling is None else self.filling_stats(*filling)
        self._bar.update(self._task, completed=done, stats=stats)

    def close(self) -> None:
        if self._bar is not None:
            self._bar.stop()
