"""Training: the builder (`builder.py`: a config -> env, model, runner, devices, evaluator), the
compiled budget loop (`budget.py`), the host loop (`loop.py`: chunks, logs, evaluations,
checkpoints), the command line (`cli.py`), and the run's infrastructure: checkpoints, logs, the
run lock, stop signals, progress, devices and hosts.
"""
