"""The lowest floor: what every layer shares and nothing here imports from above.

`options` (flag names, checks, `ConfigError`), `metrics` (the metrics convention, on device and on
the host), `parallel` (the data-parallel axis), `units` (what `--num-updates` counts), `stats`
(intervals across seeds), `files` (atomic writes).
"""
