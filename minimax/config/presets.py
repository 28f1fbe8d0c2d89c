"""The methods' published configurations, by preset name (`python train.py --preset accel`).

The minimax report's Table 5 (LSTM student) and Table 6 (S5 student, `*_s5`), value for value
(docs/DESIGN.md lists where the released JSON configs differ), SFL's authors' maze run (`sfl`),
NCC's (`ncc`, `ncc_reg`), SFL's JaxNav runs (`jaxnav_dr`, `jaxnav_plr`, `jaxnav_sfl`) and the Kinetix authors'
(`kinetix_dr`, `kinetix_plr`, `kinetix_accel`, `kinetix_sfl`);
`python train.py --preset plr --lr 1e-3` overrides one value. A preset is data (flat options);
`minimax.config.PRESETS` holds them as `TrainConfig`s. The report's presets train for 30,000 PPO
updates of the student (`--budget updates`), its "30k PPO updates"; the others for their authors'
step budgets.
"""

from __future__ import annotations

from minimax.core.methods import get_method

_SHARED = dict(num_updates=30_000, num_envs=32, num_steps=256, n_epochs=5, n_minibatches=1, clip_eps=0.2,
               clip_value=True, max_grad_norm=0.5, adam_eps=1e-5, value_coef=0.5, gae_lambda=0.98, maze_height=13,
               maze_width=13, normalize_obs=True, recurrent_cell="lstm", recurrent_size=256,
               eval_every=100, eval_episodes=10, checkpoint_every=1000)
"""Shared by every preset. The maze's step budget (250) and evaluation suite (validation) are its
environment defaults (`envs/maze/spec.py`), so a preset with `--env` keeps that env's own."""
_PLR = dict(buffer_size=4000, score_function="maxmc", score_transform="rank", staleness_coef=0.3,
            min_fill_ratio=0.5, unique_levels=True)
_TEACHER = dict(teacher_lr=1e-4, teacher_gamma=0.995, teacher_gae_lambda=0.98, teacher_entropy_coef=0.05,
                teacher_value_coef=0.5, teacher_n_epochs=5, teacher_n_minibatches=1, teacher_clip_eps=0.2,
                teacher_n_walls=60, teacher_noise_dim=50, teacher_replace_wall_pos=True, teacher_conv_filters=128,
                teacher_recurrent_size=256)
"""Table 5's PAIRED column for the generator (teacher), with the release's `maze/paired.json` for
what the table leaves out (design budget, noise, network)."""
_ACCEL = dict(mutation_criterion="batch", mutation_subsample=4, n_walls=0)  # ACCEL grows levels from empty rooms

TABLE_5 = {
    # preset: (method, gamma, lr, student entropy, replay rate p, temperature beta, mutations)
    "dr": ("dr", 0.995, 1e-4, 1e-3, None, None, None),
    "plr": ("robust_plr", 0.995, 5e-5, 0.0, 0.5, 0.1, None),
    "accel": ("accel", 0.995, 1e-4, 0.0, 0.8, 0.1, 20),
    "pplr": ("parallel_plr", 0.999, 1e-4, 0.0, 0.5, 0.3, None),
    "paccel": ("parallel_accel", 0.995, 1e-4, 0.0, 0.8, 0.1, 10),
    "paired": ("paired", 0.995, 1e-4, 1e-3, None, None, None),
    "pop_paired": ("pop_paired", 0.995, 1e-4, 1e-3, None, None, None),
    "minimax_adversary": ("minimax_adversary", 0.995, 1e-4, 1e-3, None, None, None),
}
"""The minimax report's Table 5 (LSTM student), the columns that differ between methods."""


TABLE_6 = {
    # preset: (method, gamma, lr, student entropy, replay rate p, temperature beta, mutations, S5 layer norm)
    "dr_s5": ("dr", 0.995, 3e-5, 1e-3, None, None, None, "post"),
    "paired_s5": ("paired", 0.995, 1e-4, 1e-3, None, None, None, "post"),
    "plr_s5": ("robust_plr", 0.999, 3e-5, 1e-3, 0.5, 0.3, None, "pre"),
    "pplr_s5": ("parallel_plr", 0.995, 3e-5, 1e-3, 0.5, 0.3, None, "post"),
    "accel_s5": ("accel", 0.999, 3e-5, 1e-3, 0.8, 0.3, 10, "post"),
    "paccel_s5": ("parallel_accel", 0.999, 1e-5, 0.0, 0.8, 0.3, 20, "post"),
}
"""The minimax report's Table 6 (S5 student), the columns that differ between methods. Shared with
Table 5: everything in `_SHARED`, `_PLR` (staleness 0.3, buffer 4000, MaxMC, rank) and ACCEL's batch
mutation of 4; S5: 2 layers, 2 blocks. The PAIRED column's generator entropy is 1e-3 (Table 5: 0.05)."""
_S5 = dict(recurrent_cell="s5", s5_layers=2, s5_blocks=2)


def _preset(name: str) -> dict:
    if name in TABLE_6:
        method, gamma, lr, entropy, p, beta, mutations, layernorm = TABLE_6[name]
    else:
        (method, gamma, lr, entropy, p, beta, mutations), layernorm = TABLE_5[name], None
    values = dict(preset=name, method=method, gamma=gamma, lr=lr, entropy_coef=entropy, n_walls=60, **_SHARED)
    if get_method(method).designs_levels:
        values.update(_TEACHER)
    elif method != "dr":
        values.update(_PLR, replay_prob=p, temperature=beta)
    if mutations:
        values.update(_ACCEL, n_mutations=mutations)
    if layernorm:
        values.update(_S5, s5_layernorm=layernorm)
        if get_method(method).designs_levels:
            values.update(teacher_entropy_coef=1e-3)
    return values


SFL_MAZE = dict(preset="sfl", method="sfl", num_updates=4500, num_envs=256, num_steps=256, lr=2.5e-4, anneal_lr=True,
                gamma=0.99, gae_lambda=0.95, n_epochs=4, n_minibatches=4, clip_eps=0.04, clip_value=True,
                entropy_coef=0.0, value_coef=0.5, max_grad_norm=0.5, adam_eps=1e-5, n_walls=60, maze_height=13,
                maze_width=13, normalize_obs=True, recurrent_cell="lstm", recurrent_size=256, eval_every=100,
                eval_episodes=10, checkpoint_every=1000)
"""SFL's authors' MiniGrid maze run (`amacrutherford/sampling-for-learnability`, `sfl/train/config/
minigrid-sfl.yaml` with `env/minigrid.yaml` and `learning/ippo-minigrid.yaml`): 256 envs x 256 steps,
4 epochs x 4 minibatches, clip 0.04 (ratio and value), gamma 0.99, lambda 0.95, no entropy bonus,
lr 2.5e-4 annealed linearly, 4,500 updates (the 45 blocks of 100 its loop runs of the nominal 4,577),
60-wall 13x13 mazes; the sampling options are `SFLConfig`'s defaults. docs/DESIGN.md lists each
value's source and where we differ."""


NCC_MAZE = dict(preset="ncc", method="ncc", num_updates=4500, num_envs=256, num_steps=256, lr=0.0014658280281033783,
                anneal_lr=True, optimizer="ti_ada", gamma=0.995, gae_lambda=0.98, n_epochs=1, n_minibatches=1,
                clip_eps=0.2, clip_value=True, entropy_coef=0.001, value_coef=0.5, max_grad_norm=0.25, adam_eps=1e-5,
                n_walls=60, maze_height=13, maze_width=13, agent_view_size=5, normalize_obs=True,
                recurrent_cell="lstm", recurrent_size=256, eval_every=100, eval_episodes=10, checkpoint_every=1000,
                ncc_buffer_size=4000, ncc_attempts=5, ncc_attempt_steps=256, ncc_score="learnability",
                ncc_meta_lr=0.1, ncc_meta_reg=0.05, ncc_meta_trunc=1e-5)
"""NCC's authors' MiniGrid maze run (nmonette/NCC-UED, `minigrid/train/config/minigrid-ncc.yaml` with
`learning/ippo-minigrid-ncc.yaml`, `ued/ncc.yaml`, `env/minigrid.yaml`): 256 envs x 256 steps, one
epoch of one minibatch, lr 0.00147 annealed, their TiAda student optimiser, gamma 0.995, lambda 0.98,
clip 0.2, entropy 0.001, grad norm 0.25; a 4,000-level buffer scored over 5 attempts of 256 steps;
META_LR 0.1, META_REG 0.05, META_TRUNC 1e-5; 3e8 steps (4,577 updates; 4,500 as `sfl`). AMaze
differs from their jaxued maze only as docs/methods.md lists; the student is our Table 5 network,
not their 512-unit one with layer norm."""

NCC_REG_MAZE = {**NCC_MAZE, "preset": "ncc_reg", "ncc_score": "oracle_regret", "ncc_meta_lr": 0.005,
                "ncc_meta_reg": 0.032}
"""NCC-Reg (`minigrid-ncc-reg.yaml`, `minigrid_ncc_regret.py`): NCC scoring levels by oracle regret, with
META_LR 0.005 and META_REG 0.032."""


JAXNAV_DR = dict(preset="jaxnav_dr", method="dr", env="jaxnav", num_updates=2250, num_envs=256, num_steps=512,
                 lr=2.5e-4, anneal_lr=True, gamma=0.99, gae_lambda=0.95, n_epochs=4, n_minibatches=4, clip_eps=0.04,
                 clip_value=True, entropy_coef=0.0, value_coef=0.5, max_grad_norm=0.5, adam_eps=1e-5,
                 recurrent_cell="gru", recurrent_size=512, mlp_hidden=512, eval_every=50, eval_episodes=10,
                 checkpoint_every=250)
"""SFL's authors' single-agent JaxNav learner (`amacrutherford/sampling-for-learnability`, `sfl/train/config/
env/jaxnav.yaml` with `learning/ippo-jaxnav.yaml`): 256 envs x 512 steps, 4 epochs x 4 minibatches, clip 0.04,
gamma 0.99, lambda 0.95, no entropy bonus, lr 2.5e-4 annealed, a 512-unit GRU; 3e8 steps (2,288 updates;
2,250, the 45 blocks of 50 their loop runs). The environment's defaults are that config's (`envs/jaxnav`)."""

JAXNAV_PLR = {**JAXNAV_DR, "preset": "jaxnav_plr", "method": "robust_plr", "buffer_size": 4000, "replay_prob": 0.5,
              "score_function": "maxmc", "score_transform": "top_k", "top_k": 1, "temperature": 1.0,
              "staleness_coef": 0.3, "min_fill_ratio": 1.0, "unique_levels": False}
"""SFL's JaxNav PLR baseline (`ued/plr.yaml` there, robust as its `robust_plr_maxmc` runs): MaxMC, top-1
prioritisation, staleness 0.3, a 4,000-level buffer filled before any replay, replay probability 0.5, no
duplicate check."""

JAXNAV_SFL = {**JAXNAV_DR, "preset": "jaxnav_sfl", "method": "sfl", "sfl_batches": 5, "sfl_batch_levels": 1000,
              "sfl_rollout_steps": 1000, "sfl_set_size": 100, "sfl_refresh_every": 50, "sfl_set_fraction": 0.5}
"""SFL on JaxNav (`jaxnav-sfl.yaml` there): 5 batches of 1,000 levels played 1,000 steps, the 100 most learnable
kept, refreshed every 50 updates (their EVAL_FREQ block), 128 of the 256 envs on them."""

KINETIX_DR = dict(preset="kinetix_dr", method="dr", env="kinetix", kinetix_size="s", num_updates=8192, num_envs=2048,
                  num_steps=64, lr=5e-5, anneal_lr=False, gamma=0.995, gae_lambda=0.9, n_epochs=8, n_minibatches=32,
                  clip_eps=0.2, entropy_coef=0.01, value_coef=0.5, max_grad_norm=1.0, adam_eps=1e-5,
                  recurrent_cell="none", mlp_hidden=128, log_every=64, eval_every=64, eval_episodes=20,
                  checkpoint_every=512)
"""The Kinetix authors' PPO (`FLAIROx/Kinetix`, `configs/ppo.yaml`: `learning/ppo-base.yaml` + `ppo-rnn.yaml`,
`env_size/s.yaml`, `eval/s.yaml`): 2,048 envs x 64 steps, 8 epochs x 32 minibatches, gamma 0.995, lambda 0.9,
clip 0.2, entropy 0.01, grad norm 1.0, a constant lr 5e-5, adam eps 1e-5; 2^30 steps (8,192 updates); 20 episodes
per held-out level. Their default student is an entity transformer (the `*_transformer` presets below); these
train the flat-symbolic MLP (`envs/kinetix`)."""

KINETIX_PLR = {**KINETIX_DR, "preset": "kinetix_plr", "method": "plr", "num_steps": 256, "num_updates": 2048,
               "buffer_size": 4000, "replay_prob": 0.5, "score_function": "maxmc", "score_transform": "rank",
               "temperature": 1.0, "staleness_coef": 0.3, "min_fill_ratio": 0.5, "unique_levels": False,
               "kinetix_filter_steps": 64}
"""Their PLR (`configs/plr.yaml`, `ued/plr.yaml`): MaxMC with rank prioritisation (temperature 1), staleness
0.3, replay probability 0.5, a 4,000-level buffer replayed once half full, no duplicate check, gradient updates
on new levels (`exploratory_grad_updates`: PLR, not robust PLR), new levels through the no-op filter. Their cycle
is 4 x 64 steps with a PPO update after each 64; ours one 256-step rollout and one update (2^30 steps)."""

KINETIX_ACCEL = {**KINETIX_PLR, "preset": "kinetix_accel", "method": "accel", "n_mutations": 5}
"""Their ACCEL (`ued/accel.yaml`): the PLR settings above with 5 edits per mutation."""

KINETIX_SFL = {**KINETIX_DR, "preset": "kinetix_sfl", "method": "sfl", "num_steps": 256, "num_updates": 2048,
               "sfl_batches": 3, "sfl_batch_levels": 4096, "sfl_rollout_steps": 512, "sfl_set_size": 1024,
               "sfl_refresh_every": 128, "sfl_set_fraction": 0.5, "kinetix_filter_steps": 64,
               "log_every": 128, "eval_every": 128}
"""Their SFL (`configs/sfl.yaml`, `ued/sfl.yaml`): 3 batches of 4,096 filtered random levels played 512 steps,
the 1,024 most learnable kept, refreshed every 128 updates, half the envs on them; 256-step rollouts."""

KINETIX_TRANSFORMER = dict(kinetix_obs="entity", student="transformer")
"""The authors' default agent (`configs/env/entity.yaml`, `model/model-base.yaml`, `model-transformer.yaml`): the
entity observation and their entity transformer (`models/entity_transformer.py`: its defaults are their config)."""

KINETIX_DR_TRANSFORMER = {**KINETIX_DR, **KINETIX_TRANSFORMER, "preset": "kinetix_dr_transformer"}
KINETIX_PLR_TRANSFORMER = {**KINETIX_PLR, **KINETIX_TRANSFORMER, "preset": "kinetix_plr_transformer"}
KINETIX_SFL_TRANSFORMER = {**KINETIX_SFL, **KINETIX_TRANSFORMER, "preset": "kinetix_sfl_transformer"}
"""`kinetix_dr`, `kinetix_plr` and `kinetix_sfl` with the authors' transformer student, as their `ppo.yaml`, `plr.yaml`
and `sfl.yaml` run (size s by default, as theirs; their released general agents trained on size l:
`--kinetix-size l`, evaluated with `evaluate.py --suite all`)."""

XLAND_DR = dict(preset="xland_dr", method="dr", env="xland", xland_benchmark="high-3m", xland_version="v2",
                xland_trial_steps=4096, num_updates=38_144, num_envs=8192, num_steps=32, n_epochs=1, n_minibatches=16,
                lr=1e-3, anneal_lr=True, adam_eps=1e-8, gamma=0.99, gae_lambda=0.95, clip_eps=0.2, clip_value=True,
                entropy_coef=0.01, value_coef=0.5, max_grad_norm=0.5, normalize_obs=False, recurrent_cell="gru",
                recurrent_size=1024, head_hidden=256, log_every=128, eval_every=1280, eval_episodes=1,
                checkpoint_every=1280)
"""SFL's XLand DR (`xland/training/train_meta_task.py` of their code; xminigrid's meta-RL baseline): rulesets of
`high-3m` (v2) in R4-13x13, meta-RL trials of 4,096 steps (a fresh ruleset per env at each trial's end), 8,192 envs
x 32 steps per PPO update (128 per trial), 1 epoch x 16 minibatches, lr 1e-3 decayed linearly (theirs stepwise per
trial), adam eps 1e-8, gamma 0.99, lambda 0.95, clip 0.2 (value too), entropy 0.01, grad norm 0.5; a GRU of 1,024
with 256-unit heads (`models/xland.py`); 10^10 steps (298 trials: 38,144 updates). Evaluation: `evaluate.py
--suite sfl` (10-episode trials on their 10,000 rulesets)."""

XLAND_SFL = {**XLAND_DR, "preset": "xland_sfl", "method": "sfl", "num_updates": 21_760, "sfl_batches": 1,
             "sfl_batch_levels": 40_000, "sfl_rollout_steps": 5070, "sfl_episodes": 5070, "sfl_set_size": 8192,
             "sfl_refresh_every": 128, "sfl_set_fraction": 1.0, "sfl_cycle_updates": 128}
"""SFL's XLand SFL (`xland/training/train_meta_task_sfl.py`): `xland_dr`'s learner; before every trial 40,000
rulesets sampled and each played 5,070 steps (10 episodes' worth; every finished episode counts), the 8,192 of
highest p (1 - p) kept, every env drawing its trial's ruleset from them (none fresh); a trial's rulesets kept
for its 128 PPO updates; 5.7 x 10^9 steps (170 trials: 21,760 updates). Their scoring rollout is one 5,070-step
trial; here a 4,096-step trial and 974 steps of a second (the run's trial length)."""

XLAND_PLR = {**XLAND_DR, "preset": "xland_plr", "method": "plr", "buffer_size": 40_000, "replay_prob": 0.95,
             "score_function": "maxmc", "score_transform": "rank", "temperature": 1.0, "staleness_coef": 0.3,
             "min_fill_ratio": 1.0, "unique_levels": False, "buffer_replacement": "jaxued", "cycle_updates": 128}
"""SFL's XLand PLR (`xland/training/train_meta_task_ued.py`, the PLR (MaxMC) row of their table): `xland_dr`'s
learner and budget (10^10 steps); one replay decision per trial for the whole batch (p 0.95 once the 40,000-ruleset
buffer is full), a trial's rulesets kept for its 128 PPO updates and scored at its end by MaxMC over all its
episodes (`runners/plr_trials.py`), rank prioritisation with temperature 1, staleness 0.3, no duplicate check,
jaxued's buffer (their `LevelSampler`), gradient updates on new rulesets too (`exploratory_grad_updates`: PLR, not
robust PLR). MaxMC's max return of a replay is the best of its stored one and this trial's; theirs is this trial's."""

PACE_MAZE = {**_preset("plr"), "preset": "pace", "score_function": "pace"}
"""PACE (arXiv 2605.01358; `curricula/pace.py`): robust PLR (Table 5's `plr`: p 0.5, rank prioritisation with
temperature 0.1, staleness 0.3, a 4,000-level buffer) scoring levels by their PPO update's squared norm. The
paper builds on PLR's replay; the hyperparameters it used are not available to us, so these are the report's
robust PLR values with PACE's score (docs/methods.md)."""

CENIE_MAZE = {**_preset("plr"), "preset": "cenie", "method": "cenie", "novelty_coef": 0.5}
"""PLR-CENIE (NeurIPS 2024; `runners/cenie.py`): robust PLR (Table 5's `plr`) replaying by the mean of the rank
distributions of regret (MaxMC) and of state-action novelty (alpha 0.5, the paper's). The paper's appendix
table (window, components, regularisation, its PLR settings) was not readable here: the coverage options are
`NoveltyConfig`'s defaults, and the PLR ones the report's, as for PACE (docs/methods.md)."""

ACCEL_CENIE_MAZE = {**_preset("accel"), "preset": "accel_cenie", "method": "accel_cenie", "novelty_coef": 0.5}
"""ACCEL-CENIE (the CENIE paper's ACCEL variant; `runners/cenie.py`): ACCEL (Table 5's `accel`) replaying by the
mean of the regret and novelty rank distributions, the children's novelty measured too; the coverage options
are `NoveltyConfig`'s defaults, as for `cenie`."""

TRACED_MAZE = {**_preset("accel"), "preset": "traced", "method": "traced", "score_function": "pvl",
               "traced_transition_coef": 1.0, "traced_colearnability_coef": 1.0}
"""TRACED (ICLR 2026; `runners/traced.py`): ACCEL (Table 5's `accel`) scoring PVL + the transition prediction
loss, with co-learnability, both weights 1 (the authors' maze config). Their other settings (16 workers, replay
probability 0.8, 5 random edits from empty rooms, PPO lr 1e-4 with 5 epochs, 250M env steps) are not taken:
this keeps the report's ACCEL so that only the curriculum differs from `accel` (docs/methods.md)."""

REMIDI_MAZE = {**_preset("plr"), "preset": "remidi", "method": "remidi", "score_function": "perfect_regret",
               "remidi_stages": 4, "remidi_stage_cycles": 1000}
"""ReMiDi (ICML 2024; `runners/remidi.py`): robust PLR (Table 5's `plr`) over 4 stages of 1,000 cycles, scoring
levels by their discounted true regret as the authors' code computes it (`perfect_regret`; until 2026-11-28 the
undiscounted `oracle_regret`), as their maze scripts do (`--tau_buffer_size 4`, `--number_of_replays_per_buffer
1000`; those scripts call `x_remidi.py`, which their repository does not ship: its `x_minigrid_remidi.py` takes
`--num_outer_adversaries`, default 16 stages). Their other settings (replay 0.8, temperature 1, a 256-level buffer,
lr 1e-3, no entropy bonus, 25 walls) are not taken: only the curriculum differs from `plr` (docs/methods.md)."""

PRESET_OPTIONS: dict[str, dict] = {**{name: _preset(name) for name in (*TABLE_5, *TABLE_6)}, "sfl": SFL_MAZE,
                                   "ncc": NCC_MAZE, "ncc_reg": NCC_REG_MAZE, "jaxnav_dr": JAXNAV_DR,
                                   "jaxnav_plr": JAXNAV_PLR, "jaxnav_sfl": JAXNAV_SFL, "kinetix_dr": KINETIX_DR,
                                   "kinetix_plr": KINETIX_PLR, "kinetix_accel": KINETIX_ACCEL,
                                   "kinetix_sfl": KINETIX_SFL, "kinetix_dr_transformer": KINETIX_DR_TRANSFORMER,
                                   "kinetix_plr_transformer": KINETIX_PLR_TRANSFORMER,
                                   "kinetix_sfl_transformer": KINETIX_SFL_TRANSFORMER, "pace": PACE_MAZE,
                                   "cenie": CENIE_MAZE, "accel_cenie": ACCEL_CENIE_MAZE, "traced": TRACED_MAZE,
                                   "remidi": REMIDI_MAZE, "xland_dr": XLAND_DR,
                                   "xland_sfl": XLAND_SFL, "xland_plr": XLAND_PLR}
"""The methods' published configurations, by preset name: the minimax report's with an LSTM student
(its Table 5; the learned-teacher presets share Table 5's PAIRED column) and with an S5
student (its Table 6, `*_s5`; the S5 PAIRED teacher keeps Table 5's LSTM network, as the report
replaces the student's LSTM only), and SFL's and NCC's authors', as `{option: value}` by flat option
name: data, below the config tree (`config/tree.py` builds `PRESETS`, the `TrainConfig`s, from it)."""


def preset_method(preset: str) -> str | None:
    """The method the preset `preset` trains (None for an unknown name)."""
    return PRESET_OPTIONS[preset]["method"] if preset in PRESET_OPTIONS else None
