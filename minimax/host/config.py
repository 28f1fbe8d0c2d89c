"""The configuration of a training run on a host environment (Procgen, gymnasium): the PLR paper's protocol.

A host environment steps on the CPU in its own code (`minimax.envs.host`), so its runs have their
own config: the env's levels are integer seeds from a finite training set (`--num-train-levels`
from `--start-level`), the curriculum is the reference's `LevelSampler` (`SamplerConfig`), and the
student is the IMPALA ResNet of the PLR paper. The defaults are the paper's Procgen protocol
(facebookresearch/level-replay's `train.py`): 64 envs x 256 steps, PPO 3 epochs x 8 minibatches,
Adam 5e-4 (eps 1e-5), gamma 0.999, lambda 0.95, entropy 0.01, value 0.5, clip 0.2 (policy and
value), grad norm 0.5, return normalisation (running, gamma 0.99, clip 10), 25M env steps,
200 training levels in easy mode. `--method plr` is PLR (value_l1, rank, beta 0.1, staleness 0.1);
`--method dr` is the paper's uniform baseline (each episode a uniform training level).
`--method robust_plr` is robust PLR (PLR⊥, Jiang et al. 2021b, as facebookresearch/dcd runs it): one
replay decision per rollout, every env forced onto a replayed level or onto a new one for the whole
rollout (an episode that ends restarts the same level), and a PPO update only after replay rollouts;
new-level rollouts only score their levels. Its rollouts without an update still count towards
`--num-env-steps` (env steps played, as the reference counts them), so it makes fewer updates.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
from pathlib import Path
from typing import Literal

import tyro

from minimax.agents.ppo import PPOConfig
from minimax.host.level_sampler import SamplerConfig
from minimax.core.options import ConfigError, check, read_config_json
from minimax.core.files import write_atomically

HostMethod = Literal["dr", "plr", "robust_plr"]

PROCGEN_PPO = PPOConfig(lr=5e-4, adam_eps=1e-5, gamma=0.999, gae_lambda=0.95, n_epochs=3, n_minibatches=8,
                        clip_eps=0.2, clip_value=True, entropy_coef=0.01, value_coef=0.5, max_grad_norm=0.5)


@dataclasses.dataclass(frozen=True)
class HostTrainConfig:
    """Train a student on a host environment (--env procgen-<game> or gym-<id>) with PLR or uniform levels,
    as the PLR paper's Procgen protocol."""

    env: str = "procgen-bigfish"
    """procgen-<game> (the 16 Procgen games) or gym-<gymnasium id> (levels are reset seeds)."""
    method: HostMethod = "plr"
    """plr (the level sampler with --strategy), dr (each episode a uniform training level: the paper's baseline) or
    robust_plr (one replay decision per rollout, updates only after replays)."""
    distribution_mode: str = "easy"
    """Procgen's distribution mode (easy, hard, ...)."""
    num_train_levels: int = 200
    """Training levels: seeds --start-level ... --start-level + N - 1."""
    start_level: int = 0
    """First training level seed."""
    seed: int = 0
    """Random seed (network, PPO minibatches, the sampler, the envs)."""
    run_name: str = ""
    """Directory name under --out-dir; empty means '<env>+<method>-seed<seed>'."""
    out_dir: str = "runs"
    """Where run directories are created."""
    num_env_steps: int = 25_000_000
    """Length of the run in env steps (rounded up to whole rollouts of --num-envs x --num-steps)."""
    num_envs: int = 64
    """Parallel environments."""
    num_steps: int = 256
    """Steps per env per rollout."""
    normalize_returns: bool = True
    """Scale rewards by a running std of the discounted return (gamma 0.99, clip 10), as the reference."""
    impala_channels: tuple[int, ...] = (16, 32, 32)
    """Channels of the IMPALA ResNet's stages."""
    hidden: int = 256
    """Width of the IMPALA ResNet's last dense layer (image observations), or of the MLP's two layers (vectors)."""
    log_every: int = 1
    """Write a log row every N updates."""
    eval_every: int = 50
    """Evaluate on test and training levels every N updates (0: only at the end)."""
    eval_episodes: int = 10
    """Episodes per periodic evaluation, on test levels and on training levels each (the reference's 10)."""
    final_eval_episodes: int = 100
    """Episodes of the final evaluation on test levels (the reference: 1,000)."""
    checkpoint_every: int = 25
    """Save a checkpoint every N updates (and at the end)."""
    time_limit: float = 0.0
    """Stop after this many seconds at a checkpoint, with exit status 3 (rerun with --resume to go on); 0 = none.
    For machines lent by the call (a GPU job chained over calls of a few minutes)."""
    resume: bool = False
    """Continue the run in --out-dir/--run-name from its last checkpoint."""
    overwrite: bool = False
    """Delete an existing run of the same name first."""
    progress: bool = True
    """Show a progress bar (plain lines where stdout is no terminal)."""
    ppo: PPOConfig = PROCGEN_PPO
    sampler: SamplerConfig = SamplerConfig()

    def validate(self) -> "HostTrainConfig":
        """Raise one `ConfigError` naming every bad option (called once parsed: tyro would wrap an error
        raised while it builds the config in a box of its own)."""
        check(self, self._rules)
        return self

    def _rules(self, c):
        c.integer("num_train_levels", 1)
        c.integer("num_envs", 1)
        c.integer("num_steps", 1)
        c.integer("num_env_steps", 1)
        c.integer("log_every", 1)
        c.integer("checkpoint_every", 1)
        c.integer("eval_every", 0)
        c.integer("eval_episodes", 1)
        c.integer("final_eval_episodes", 1)
        c.integer("hidden", 1)
        if not self.time_limit >= 0:  # NaN fails too
            c.add(f"--time-limit must be >= 0 seconds (0 = none), got {self.time_limit!r}")
        if self.start_level < 0:
            c.add(f"--start-level must be >= 0, got {self.start_level!r}")
        if not self.env.startswith(("procgen-", "gym-")):
            c.add(f"--env {self.env!r} is no host environment (procgen-<game> or gym-<gymnasium id>)")
        elif self.env.startswith("procgen-"):
            from minimax.envs.host.procgen import validate_procgen_args  # noqa: PLC0415
            try:
                validate_procgen_args(self.env.removeprefix("procgen-"), self.distribution_mode, self.num_envs)
            except ValueError as e:
                c.add(f"--env {self.env}: {e}")
        if (self.num_envs * self.num_steps) % self.ppo.n_minibatches:
            c.add(f"--n-minibatches {self.ppo.n_minibatches} must divide --num-envs x --num-steps "
                  f"({self.num_envs * self.num_steps})")
        if self.method == "robust_plr" and not self.sampler.scored:
            c.add(f"--method robust_plr needs a scoring --strategy (value_l1, gae, ...), got {self.sampler.strategy!r}")
        if self.method == "robust_plr" and self.sampler.partial_episodes != "flush":
            c.add("--method robust_plr restarts every env at each rollout, so an episode never continues into the "
                  "next one: --partial-episodes must be flush")
        if self.resume and self.overwrite:
            c.add("--resume continues the run and --overwrite deletes it to start afresh: give one of them")

    # ------------------------------------------------------------------ derived
    @property
    def name(self) -> str:
        return self.run_name or f"{self.env}+{self.method}-seed{self.seed}"

    @property
    def run_dir(self) -> Path:
        return Path(self.out_dir) / self.name

    @property
    def num_updates(self) -> int:
        per = self.num_envs * self.num_steps
        return -(-self.num_env_steps // per)

    @property
    def train_levels(self) -> range:
        return range(self.start_level, self.start_level + self.num_train_levels)

    @property
    def sampler_config(self) -> SamplerConfig:
        """The sampler the method runs: the configured one for plr, uniform over the training levels for dr."""
        return self.sampler if self.method != "dr" else dataclasses.replace(self.sampler, strategy="random")

    # ------------------------------------------------------------------ files
    def to_dict(self) -> dict:
        out = dataclasses.asdict(self)
        out["ppo"] = {f.name: getattr(self.ppo, f.name) for f in dataclasses.fields(self.ppo)}
        out["impala_channels"] = list(self.impala_channels)
        out["kind"] = "host"
        return out

    def save(self, path) -> None:
        write_atomically(Path(path), json.dumps(self.to_dict(), indent=2) + "\n")

    @classmethod
    def load(cls, path) -> "HostTrainConfig":
        values = read_config_json(path)
        values.pop("kind", None)
        try:
            values["ppo"] = PPOConfig(**values["ppo"])
            values["sampler"] = SamplerConfig(**values["sampler"])
            values["impala_channels"] = tuple(values["impala_channels"])
            return cls(**values).validate()
        except (KeyError, TypeError) as e:
            raise ConfigError(f"config {path} is no host-environment run config: {e}") from None


def is_host_config(path) -> bool:
    """A saved config.json of a host-environment run (`evaluate.py` and `--resume` dispatch on it)."""
    try:
        return json.loads(Path(path).read_text()).get("kind") == "host"
    except (OSError, json.JSONDecodeError, AttributeError):
        return False


def parse_host_config(argv: list[str]) -> HostTrainConfig:
    """The command line of a host-environment run (flat flags: `--lr`, `--strategy`). `--resume` starts
    from the run's saved config and keeps it: only where it lives, its length and the log, evaluation and
    checkpoint settings may change."""
    pre = argparse.ArgumentParser(add_help=False)
    pre.add_argument("--resume", action="store_true")
    for name in ("run-name", "out-dir", "env", "method", "seed"):
        pre.add_argument(f"--{name}")
    known, _ = pre.parse_known_args(argv)
    default, saved = HostTrainConfig(), None
    if known.resume and "-h" not in argv and "--help" not in argv:
        probe = dataclasses.replace(default, **{k: v for k, v in dict(
            run_name=known.run_name, out_dir=known.out_dir, env=known.env, method=known.method,
            seed=None if known.seed is None else int(known.seed)).items() if v is not None})
        path = probe.run_dir / "config.json"
        if not path.exists():
            raise ConfigError(f"--resume: no run to resume at {probe.run_dir} (no config.json)")
        saved = HostTrainConfig.load(path)
        default = dataclasses.replace(saved, resume=True, out_dir=str(probe.run_dir.parent),
                                      run_name=probe.run_dir.name, time_limit=0.0)  # a limit is per command
    cfg = tyro.cli(tyro.conf.OmitArgPrefixes[HostTrainConfig], default=default, args=argv, prog="train.py",
                   description=HostTrainConfig.__doc__).validate()
    if saved is not None:
        keep = {"resume", "overwrite", "out_dir", "run_name", "progress", "log_every", "eval_every", "time_limit",
                "checkpoint_every", "num_env_steps", "final_eval_episodes", "eval_episodes"}
        given, kept = cfg.to_dict(), saved.to_dict()
        changed = [k for k in given if k not in keep and given[k] != kept[k]]
        if changed:
            raise ConfigError("--resume keeps the run's saved config; these options differ from it: "
                              + ", ".join(f"--{k.replace('_', '-')} (saved {kept[k]!r}, given {given[k]!r})"
                                          for k in changed))
    return cfg
