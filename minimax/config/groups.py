"""The training config's own option groups, those no component module owns: the environment and
its level generator (`EnvConfig`), the student network (`ModelConfig`) and periodic evaluation
(`EvalConfig`). Each field is a flag of `train.py` (its docstring the `--help` text); each group
checks its own values (`__post_init__`), `config.TrainConfig` the ones across groups.
"""

from __future__ import annotations

import dataclasses
from typing import Annotated, Literal

import tyro

from minimax.envs.registry import env_names
from minimax.models.s5 import s5_shape_problem
from minimax.core.options import check


@dataclasses.dataclass(frozen=True, eq=False)
class EnvConfig:
    """The environment: the options every environment shares. The chosen environment's own options
    (maze size, JaxNav's maps, ...) are the group it declared (`envs/registry.py: register`), and read
    through this object too: `options.maze_height` (`with_own`)."""

    env_name: Annotated[str, tyro.conf.arg(name="env")] = "maze"
    """The UED environment (minimax.envs.registry): maze (AMaze), cartpole or pendulum (gymnax physics as levels),
    craftax (Craftax-Classic worlds; needs the craftax package), jaxnav (JaxNav maps; needs jaxmarl), kinetix
    (Kinetix 2D physics scenes; needs the kinetix extra), or one registered with minimax.register_env. Each
    declares its own options (`python train.py --env jaxnav --help` lists them). Stepped on the host with their
    own options (docs/host_envs.md; `python train.py --env procgen-bigfish --help`): procgen-<game> (Procgen),
    gym-<id> (gymnasium)."""
    max_episode_steps: int = 0
    """Episode step budget on training levels; 0 = the environment's own (maze 250, cartpole 500, pendulum 200,
    craftax 10000, jaxnav 500, kinetix 256)."""
    train_level_file: str = ""
    """Train on the levels of this text file (evaluate.py's --levels format) instead of generated ones: DR
    draws uniformly among them, the PLR family uses them as its finite training set (as --train-levels)."""

    def __post_init__(self):
        check(self, self._rules)

    def _rules(self, c):
        if self.env_name not in env_names():
            c.add(f"--env must be one of {', '.join(env_names())}, got {self.env_name!r}")
        c.non_negative("max_episode_steps")

    def with_own(self, own) -> "EnvConfig":
        """A copy that also answers for `own`, the environment's own options (`TrainConfig` sets it)."""
        out = dataclasses.replace(self)
        object.__setattr__(out, "_own", own)
        return out

    def values(self) -> dict:
        """Every option the environment reads, shared and own, by field name."""
        own = self.__dict__.get("_own")
        return {**dataclasses.asdict(self), **(dataclasses.asdict(own) if own is not None else {})}

    def _key(self):
        return tuple(getattr(self, f.name) for f in dataclasses.fields(self)), self.__dict__.get("_own")

    def __eq__(self, other):  # its own options count: two mazes of other sizes are other environments
        return type(other) is type(self) and self._key() == other._key()

    def __hash__(self):
        return hash(self._key())

    def __getattr__(self, name):
        own = self.__dict__.get("_own")
        if own is not None and not name.startswith("_") and name in own.__dataclass_fields__:
            return getattr(own, name)
        raise AttributeError(f"--env {self.__dict__.get('env_name')} has no option {name!r}")


@dataclasses.dataclass(frozen=True)
class ModelConfig:
    """The student network (`minimax.models.MazeActorCritic`)."""

    recurrent_cell: Literal["lstm", "gru", "s5", "none"] = "lstm"
    """Recurrent core of the student network: lstm, gru, or s5 (a stack of S5 state-space layers, whose
    recurrence runs as one scan over the sequence: --s5-scan; models/s5.py); none: a feedforward student
    (the MLP of cartpole, pendulum and craftax)."""
    recurrent_size: int = 256
    """Units of the recurrent core (S5: the layers' width and state size, half of it complex states)."""
    s5_layers: int = 2
    """S5 layers stacked in the core (S5 only; the report's Table 6: 2)."""
    s5_blocks: int = 2
    """HiPPO-N blocks the S5 state matrix is initialised from (S5 only; the report swept 1, 2, 4 and chose 2)."""
    s5_layernorm: Literal["pre", "post", "none"] = "post"
    """Where each S5 layer normalises: its input (pre) or its residual output (post) (S5 only; Table 6 per method)."""
    s5_scan: Literal["auto", "parallel", "sequential"] = "auto"
    """How S5 runs its linear recurrence over a sequence: an associative (parallel) scan, a sequential one, or auto
    (parallel on GPU/TPU, sequential on CPU, where it is faster). Same results within float rounding."""
    scan_unroll: int = 0
    """Time steps per loop iteration of every scan over time (rollouts, GAE, the LSTM / GRU forward and backward,
    evaluation): a shorter chain of dependent loop iterations for a longer compile, the same results within float
    rounding. 0 = the backend's default (1 on CPU, 8 on GPU/TPU)."""
    matmul_dtype: Literal["float32", "bfloat16"] = "float32"
    """Operand dtype of every matrix product of the student and of PAIRED's teacher: bfloat16 rounds both
    operands to bfloat16 and keeps float32 results, parameters, optimiser, carries and losses (models/precision.py;
    a GPU's bfloat16 tensor cores; learning parity in benchmarks/RESULTS.md). float32: the products as before."""
    conv_filters: int = 16
    """Filters of the 3x3 VALID convolution on the image."""
    dir_embed_size: int = 5
    """Size of the agent-direction embedding."""
    head_hidden: int = 32
    """Hidden units of the policy and value heads."""
    mlp_hidden: int = 64
    """Units of each of the two tanh layers of the MLP student (vector observations: cartpole, pendulum, craftax)."""
    student: Literal["auto", "mlp", "transformer"] = "auto"
    """The student network: auto (the environment's own for its observation), mlp (flat vectors), or transformer
    (the Kinetix authors' entity transformer, models/entity_transformer.py, for Kinetix's entity observation)."""
    transformer_layers: int = 2
    """Attention layers of the entity transformer, each followed by the joints' and thrusters' messages."""
    transformer_heads: int = 8
    """Attention heads of the entity transformer (a multiple of 4: each quarter reads one of the 4 masks)."""
    transformer_qkv: int = 16
    """Query, key and value width of the entity transformer's attention (all heads together)."""
    transformer_width: int = 128
    """Entity embedding width of the entity transformer."""
    transformer_head_layers: int = 5
    """Tanh layers of the entity transformer's actor and of its critic (each)."""
    transformer_head_width: int = 128
    """Units of those layers."""

    def __post_init__(self):
        check(self, self._rules)

    def _rules(self, c):
        c.positive("recurrent_size", "conv_filters", "dir_embed_size", "head_hidden", "mlp_hidden",
                   *TRANSFORMER_OPTIONS)
        if isinstance(self.transformer_heads, int) and self.transformer_heads > 0 and self.transformer_heads % 4:
            c.add(f"--transformer-heads must be a multiple of 4 (a quarter of the heads reads each of the 4 attention "
                  f"masks), got {self.transformer_heads}")
        c.non_negative("scan_unroll")
        problem = self.recurrent_cell == "s5" and s5_problem(self.recurrent_size, self, "--recurrent-size")
        if problem and not c.problems:
            c.add(problem)


TRANSFORMER_OPTIONS = ("transformer_layers", "transformer_heads", "transformer_qkv", "transformer_width",
                       "transformer_head_layers", "transformer_head_width")
"""The entity transformer's shape options (refused for any other student)."""


def s5_problem(size, model: "ModelConfig", size_flag: str) -> str | None:
    """`models/s5.py: s5_shape_problem` for a core of width `size` (given by `size_flag`) with the
    model group's S5 shape, naming the flags."""
    return s5_shape_problem(size, model.s5_blocks, model.s5_layers, (size_flag, "--s5-blocks", "--s5-layers"))


@dataclasses.dataclass(frozen=True)
class EvalConfig:
    """Periodic evaluation on held-out levels during training."""

    eval_every: int = 100
    """Evaluate on the --eval-suite levels every this many updates (a multiple of --log-every; 0 = never)."""
    eval_suite: str = ""
    """Held-out levels for periodic evaluation: a suite of the environment (maze: validation, dcd12, or
    comma-separated maze names) or empty for the environment's default (maze: validation)."""
    eval_episodes: int = 10
    """Episodes per evaluation level (parallel envs; each env's first episode counts)."""
    eval_greedy: bool = False
    """Evaluate with the most likely action instead of sampling."""

    def __post_init__(self):
        check(self, self._rules)

    def _rules(self, c):
        c.non_negative("eval_every")
        c.positive("eval_episodes")
