"""The host-environment path (Procgen, gymnasium: environments not written in JAX): its config
(`config.py`, with the old option names in `legacy_options.py`), loop (`loop.py`), compiled learner
(`learner.py`), checkpoints (`checkpoints.py`, the host state stored as data by `state_files.py`),
scoring on given levels (`scoring.py`), its evaluate command (`evaluate.py`), and the PLR paper's
reference level sampler (`level_sampler.py`, over `segment_tree.py`) and return normaliser. The
environments themselves (the host-env contract, Procgen, gymnasium) are in `minimax.envs.host`.
"""
