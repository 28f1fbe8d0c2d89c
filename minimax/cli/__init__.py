"""The commands on top of everything: `train` (which path a run takes), `reproduce` (the report's
Table 2), `sweep` (grids of runs) and `demo` (AMaze at a glance)."""
