"""`training/programs.py` keeps a bounded number of compiled programs per process: the most recently used
program keys, so a long-lived process (a notebook, a sweep's or `reproduce`'s many runs) does not hold every
program it ever compiled (each holds memory and kernel memory maps, of which a process has a fixed number)."""

from __future__ import annotations

import minimax.training.programs as programs_module


def test_a_process_keeps_the_most_recently_used_program_keys_only(monkeypatch):
    made = []

    class Made:  # stands in for a compiled `Programs` (building one needs a runner: the contract tier's)
        def __init__(self, cfg, layout):
            made.append(cfg)

    monkeypatch.setattr(programs_module, "Programs", Made)
    monkeypatch.setattr(programs_module, "program_key", lambda cfg, layout: cfg)
    monkeypatch.setattr(programs_module, "_KEPT", type(programs_module._KEPT)())
    monkeypatch.setattr(programs_module, "KEPT_PROGRAMS", 3)
    first = programs_module.programs("a", None)
    for key in ("b", "c", "a", "d"):  # "a" used again before "d" arrives: "b" is the least recently used
        programs_module.programs(key, None)
    assert made == ["a", "b", "c", "d"] and list(programs_module._KEPT) == ["c", "a", "d"]
    assert programs_module.programs("a", None) is first  # kept, not made again, and now the most recent
    programs_module.programs("b", None)  # dropped earlier: made again, and "c" (now the least recent) goes
    assert made[-1] == "b" and list(programs_module._KEPT) == ["d", "a", "b"]
