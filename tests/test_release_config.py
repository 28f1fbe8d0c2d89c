"""`python train.py --config path/to/release/configs/maze/<name>.json`: the minimax release's maze
configs load as the release's runs (method, every value it sets), refuse what has no equivalent
naming it, and train."""

from __future__ import annotations

import json

import pytest

from minimax.config import ConfigError
from minimax.config import PRESETS
from minimax.training.run_logs import read_rows
from minimax.cli.train import main
from minimax.training.cli import parse_config
from release_configs import OWN, release_config

pytestmark = pytest.mark.contract  # tests/conftest.py's tiers: training programs at their tiny size

PRESET = {"dr": "dr", "plr": "plr", "accel": "accel", "pplr": "pplr", "paccel": "paccel", "paired": "paired",
          "s5_dr": "dr_s5", "s5_plr": "plr_s5", "s5_accel": "accel_s5", "s5_pplr": "pplr_s5", "s5_paccel": "paccel_s5",
          "s5_paired": "paired_s5"}


def write(tmp_path, name, **changes):
    doc = release_config(name)
    doc["args"].update({k: v if isinstance(v, list) else [v] for k, v in changes.items()})
    path = tmp_path / f"{name}.json"
    path.write_text(json.dumps(doc))
    return path


@pytest.mark.parametrize("name", list(PRESET))
def test_the_releases_maze_configs_load_as_its_runs(tmp_path, name):
    cfg = parse_config(["--config", str(write(tmp_path, name)), "--out-dir", str(tmp_path)])
    own, preset = OWN[name], PRESET[name]
    assert cfg.preset == preset and cfg.method == PRESETS[preset].method
    assert (cfg.seed, cfg.num_updates, cfg.budget, cfg.num_envs, cfg.num_steps) == (1, 30_000, "updates", 32, 256)
    assert (cfg.ppo.lr, cfg.ppo.gamma, cfg.ppo.gae_lambda, cfg.ppo.entropy_coef) == (
        own["lr"], own["discount"], own["student_gae_lambda"], own["student_entropy_coef"])
    assert cfg.model.recurrent_cell == own["student_recurrent_arch"] and cfg.env.n_walls == own["maze_n_walls"]
    assert cfg.eval.eval_suite == "SixteenRooms,Labyrinth,StandardMaze" and cfg.eval.eval_every == 100
    if "plr_buffer_size" in own:
        assert (cfg.buffer.capacity, cfg.replay.replay_prob, cfg.buffer.staleness_coef, cfg.buffer.temperature) \
            == (own["plr_buffer_size"], own["plr_replay_prob"], own["plr_staleness_coef"], own["plr_temp"])
        assert cfg.curriculum.score_function == "maxmc" and cfg.buffer.score_transform == "rank"
    if "plr_n_mutations" in own:
        assert cfg.mutation.n_mutations == own["plr_n_mutations"] and cfg.mutation.mutator == "minimax"
    if "teacher_entropy_coef" in own:
        assert (cfg.teacher.teacher_entropy_coef, cfg.teacher.teacher_conv_filters, cfg.teacher.teacher_score) == (
            own["teacher_entropy_coef"], own["teacher_n_conv_filters"], "relative_regret")
    if "student_s5_layernorm_pos" in own:
        assert cfg.model.s5_layernorm == own["student_s5_layernorm_pos"]


def test_what_has_no_equivalent_is_refused_naming_it(tmp_path):
    cases = [(dict(seed=[0, 1, 2]), "seed is a grid of 3 values"),
             (dict(maze_see_agent=True), "maze_see_agent True has no equivalent here"),
             (dict(student_fancy_layer=3), "release argument(s) student_fancy_layer have no equivalent"),
             (dict(ued_score="positive_value_loss"), "ued_score 'positive_value_loss' has no equivalent"),
             (dict(lr="fast"), "lr (--lr) must be a number, got 'fast'"),
             # a value of ours refused is named by the file's key, then our flag (issue 71)
             (dict(n_total_updates=0), "n_total_updates (--num-updates) must be > 0, got 0")]
    for changes, message in cases:
        with pytest.raises(ConfigError, match=message.replace("(", r"\(").replace(")", r"\)")):
            parse_config(["--config", str(write(tmp_path, "plr", **changes))])


@pytest.mark.e2e  # over 20 s here (the default run leaves it out; --slow runs it)
def test_a_release_config_trains_at_a_tiny_size(tmp_path):
    tiny = ["--maze-height", "5", "--maze-width", "5", "--n-walls", "3", "--max-episode-steps", "32",
            "--recurrent-size", "16", "--num-envs", "8", "--num-steps", "32", "--buffer-size", "16",
            "--num-updates", "2", "--log-every", "1", "--eval-every", "0", "--checkpoint-every", "0", "--no-progress"]
    main(["--config", str(write(tmp_path, "plr")), "--out-dir", str(tmp_path), *tiny])
    rows = read_rows(tmp_path / "plr-seed1")
    assert rows[-1]["gradient_updates"] == 2 and rows[-1]["cycles"] >= 2
