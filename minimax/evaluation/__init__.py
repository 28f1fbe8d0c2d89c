"""Evaluation: the evaluate command (`evaluate.py`), what it reports (`report.py`), the policies a
run directory holds (`saved_policies.py`) and learning curves (`plot.py`)."""
