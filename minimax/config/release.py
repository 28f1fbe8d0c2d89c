"""The minimax release's JSON configs as ours: `python train.py --config path/to/release/maze/plr.json`.

A release config (`src/minimax/config/configs/<env>/*.json`) is `{"args": {name: [value, ...]}}`,
a grid its `make_cmd` expands into commands. Each argument here is either
- one of our options under another name (`lr`, `plr_buffer_size` -> `--buffer-size`, ...), possibly
  with its value converted (`ued_score: max_mc` -> `--score-function maxmc`);
- read into the method (`train_runner`, `plr_use_robust_plr`, `plr_use_parallel_eval`, `n_students`,
  `plr_n_mutations`): dr, robust_plr, plr, parallel_plr, accel, parallel_accel or paired;
- about where and how the release runs, not what it trains (its log directory, verbosity, device
  count, scan unrolling, checkpoint archives): left out;
- a setting of the release that we implement only one way (or that no run of its method reads:
  PAIRED's student-side generator, `maze_replace_wall_pos`) (`maze_see_agent: false`, the default
  CNN student...): accepted with that value, refused naming the argument with any other.
Anything else, and a grid of several values for one argument (a sweep: give each value its own
config), is refused naming the argument. Our options the release does not set keep the matching
preset's values (the release's buffer semantics are our defaults: `docs/DESIGN.md`).

The release's `log_interval`, `test_interval` and `checkpoint_interval` count its loop's ticks;
ours (`--log-every`, `--eval-every`, `--checkpoint-every`) count units of `--budget`, PPO updates
by default, as its `n_total_updates` does (`budget.py`).
"""

from __future__ import annotations

from minimax.core.options import ConfigError

SAME = {
    "seed": "seed", "n_total_updates": "num_updates", "log_interval": "log_every",
    "checkpoint_interval": "checkpoint_every", "test_interval": "eval_every", "test_n_episodes": "eval_episodes",
    "n_parallel": "num_envs", "n_rollout_steps": "num_steps", "lr": "lr", "max_grad_norm": "max_grad_norm",
    "adam_eps": "adam_eps", "discount": "gamma",
    "plr_replay_prob": "replay_prob", "plr_buffer_size": "buffer_size", "plr_staleness_coef": "staleness_coef",
    "plr_temp": "temperature", "plr_min_fill_ratio": "min_fill_ratio", "plr_force_unique": "unique_levels",
    "plr_mutation_criterion": "mutation_criterion", "plr_mutation_subsample_size": "mutation_subsample",
    "plr_n_mutations": "n_mutations",
    "student_gae_lambda": "gae_lambda", "student_entropy_coef": "entropy_coef",
    "student_value_loss_coef": "value_coef", "student_ppo_n_epochs": "n_epochs",
    "student_ppo_n_minibatches": "n_minibatches", "student_ppo_clip_eps": "clip_eps",
    "student_ppo_clip_value_loss": "clip_value", "student_recurrent_arch": "recurrent_cell",
    "student_recurrent_hidden_dim": "recurrent_size", "student_hidden_dim": "head_hidden",
    "student_n_conv_filters": "conv_filters", "student_scalar_embed_dim": "dir_embed_size",
    "student_s5_n_layers": "s5_layers", "student_s5_n_blocks": "s5_blocks", "student_s5_layernorm_pos": "s5_layernorm",
    "maze_height": "maze_height", "maze_width": "maze_width", "maze_n_walls": "n_walls",
    "maze_max_episode_steps": "max_episode_steps", "maze_normalize_obs": "normalize_obs",
    "teacher_discount": "teacher_gamma", "teacher_entropy_coef": "teacher_entropy_coef",
    "teacher_gae_lambda": "teacher_gae_lambda", "teacher_lr": "teacher_lr",
    "teacher_value_loss_coef": "teacher_value_coef", "teacher_ppo_n_epochs": "teacher_n_epochs",
    "teacher_ppo_n_minibatches": "teacher_n_minibatches", "teacher_ppo_clip_eps": "teacher_clip_eps",
    "teacher_recurrent_arch": "teacher_recurrent_cell", "teacher_recurrent_hidden_dim": "teacher_recurrent_size",
    "teacher_n_conv_filters": "teacher_conv_filters", "maze_ued_n_walls": "teacher_n_walls",
    "maze_ued_noise_dim": "teacher_noise_dim", "maze_ued_replace_wall_pos": "teacher_replace_wall_pos",
}
"""Release argument -> our option of the same meaning and value."""

CONVERTED = {
    "ued_score": lambda v: {"max_mc": {"score_function": "maxmc"}, "l1_value_loss": {"score_function": "l1_value_loss"},
                            "relative_regret": {"teacher_score": "relative_regret"},
                            "mean_relative_regret": {"teacher_score": "mean_relative_regret"},
                            "population_regret": {"teacher_score": "population_regret"}}.get(v),
    "plr_use_score_ranks": lambda v: {"score_transform": "rank"} if v else None,
    "plr_mutation_fn": lambda v: {"mutator": "minimax"} if v == "default" else None,
    "lr_anneal_steps": lambda v: {"anneal_lr": False} if v == 0 else None,
    "test_env_names": lambda v: {"eval_suite": ",".join(n.removeprefix("Maze-") for n in v.split(","))}
    if all(n.startswith("Maze-") for n in v.split(",")) else None,
}
"""Release argument -> `value -> {our option: value}` (None: no equivalent for that value)."""

METHOD_ARGS = ("train_runner", "plr_use_robust_plr", "plr_use_parallel_eval", "n_students", "plr_n_mutations",
               "maze_replace_wall_pos")
"""Arguments that together choose the method (`_method`), or are checked against it."""

LEFT_OUT = {
    "log_dir": "--out-dir", "verbose": "", "render": "", "track_env_metrics": "our logs always hold them",
    "from_last_checkpoint": "--resume", "archive_interval": "", "archive_init_checkpoint": "",
    "n_devices": "--devices", "n_unroll_rollout": "scan unrolling: speed only", "student_n_unroll_update": "",
    "teacher_n_unroll_update": "", "test_agent_idxs": "", "teacher_lr_anneal_steps": "",
}
"""Arguments about how and where the release runs, not what it trains."""

ONLY = {
    "agent_rl_algo": "ppo", "env_name": "Maze", "n_eval": 1, "student_model_name": "default_student_cnn",
    "teacher_model_name": "default_teacher_cnn", "student_n_hidden_layers": 1, "teacher_n_hidden_layers": 1,
    "student_n_scalar_embeddings": 4, "student_s5_activation": "half_glu1", "teacher_s5_activation": "half_glu1",
    "teacher_hidden_dim": 32, "teacher_scalar_embed_dim": 10, "teacher_ppo_clip_value_loss": True,
    "maze_see_agent": False, "maze_obs_agent_pos": False, "maze_sample_n_walls": False,
    "maze_test_see_agent": False, "maze_test_normalize_obs": True, "maze_ued_first_wall_pos_sets_budget": False,
    "maze_ued_fixed_n_wall_steps": True, "maze_ued_set_agent_dir": False, "maze_ued_normalize_obs": True,
    "teacher_s5_n_layers": 2, "teacher_s5_n_blocks": 2, "teacher_s5_layernorm_pos": "post",
}
"""Arguments we implement one way: the only value accepted (the release's own in every maze config)."""

PRESET_OF = {"dr": "dr", "robust_plr": "plr", "parallel_plr": "pplr", "accel": "accel", "parallel_accel": "paccel",
             "paired": "paired", "plr": "plr"}
"""Our preset whose values a release config's method starts from (an S5 student: its `_s5` preset)."""


def is_release_config(values) -> bool:
    """Whether a loaded JSON document is a release config (`{"args": {...}}`) rather than ours."""
    return isinstance(values, dict) and set(values) == {"args"} and isinstance(values["args"], dict)


def release_options(values: dict, where: str) -> tuple[str, dict]:
    """`(preset, {option: value})`: the release config `values` (from `where`) in our flat options."""
    args = {}
    for name, grid in values["args"].items():
        grid = grid if isinstance(grid, list) else [grid]
        if len(grid) != 1:
            raise ConfigError(f"{where}: {name} is a grid of {len(grid)} values {grid} (a sweep); train.py runs one "
                              f"config: give each value its own")
        args[name] = grid[0]
    options, unknown = {}, []
    for name, value in args.items():
        if name in SAME:
            options[SAME[name]] = value
        elif name in CONVERTED:
            converted = CONVERTED[name](value)
            if converted is None:
                raise ConfigError(f"{where}: {name} {value!r} has no equivalent here")
            options.update(converted)
        elif name in ONLY:
            if value != ONLY[name]:
                raise ConfigError(f"{where}: {name} {value!r} has no equivalent here (only {ONLY[name]!r})")
        elif name not in LEFT_OUT and name not in METHOD_ARGS:
            unknown.append(name)
    if unknown:
        raise ConfigError(f"{where}: release argument(s) {', '.join(sorted(unknown))} have no equivalent here")
    method = _method(args, where)
    if args.get("maze_replace_wall_pos", True) is False and args.get("maze_n_walls", 0) > 0 and method != "paired":
        raise ConfigError(f"{where}: maze_replace_wall_pos false draws walls without replacement, which our "
                          f"generator does not (it draws --n-walls with replacement)")
    preset = PRESET_OF[method] + ("_s5" if options.get("recurrent_cell") == "s5" else "")
    return preset, {**options, "method": method, "preset": preset}


def _method(args: dict, where: str) -> str:
    runner = args.get("train_runner", "dr")
    if runner == "dr":
        return "dr"
    if runner == "paired":
        if args.get("n_students", 2) != 2:
            raise ConfigError(f"{where}: paired with n_students {args['n_students']} (ours: 2; --method pop_paired "
                              f"trains a population)")
        return "paired"
    if runner != "plr":
        raise ConfigError(f"{where}: train_runner {runner!r} has no equivalent here (dr, plr, paired)")
    mutates = args.get("plr_n_mutations", 0) > 0 and "plr_mutation_fn" in args
    parallel, robust = args.get("plr_use_parallel_eval", False), args.get("plr_use_robust_plr", False)
    if parallel:
        if not robust:
            raise ConfigError(f"{where}: plr_use_parallel_eval without plr_use_robust_plr has no equivalent here")
        return "parallel_accel" if mutates else "parallel_plr"
    if mutates:
        if not robust:
            raise ConfigError(f"{where}: mutations without plr_use_robust_plr have no equivalent here (ACCEL is robust)")
        return "accel"
    return "robust_plr" if robust else "plr"
