"""Pydantic models for a run: one model per TOML section, one root model.

Every model forbids unknown keys and is frozen. A field's ``description`` is
its only documentation; ``rlcli schema`` and ``show-config`` read it.
"""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal

import gymnasium as gym
from pydantic import BaseModel, BeforeValidator, Field, ValidationInfo, field_validator, model_validator

from rlcli.config.algos import (
    MASKED_ACTIONS,
    WITH_MASKS,
    WITH_MEMORY,
    AlgoConfig,
    mask_problems,
    team_problems,
    titled,
)
from rlcli.config.fields import plain_values
from rlcli.config.logger import LoggerConfig
from rlcli.config.memory import memory_problems
from rlcli.config.model import SECTION, auto_or_count, cross_field_error, section
from rlcli.config.optim import OptimConfig
from rlcli.config.schedules import CheckpointConfig, EvalConfig, TimingConfig, schedule_problems
from rlcli.config.sources import CollectorConfig, DataConfig, source_problems
from rlcli.envs import envpool_problems, register_family, vector_kwargs_problems
from rlcli.envs.teams.registry import team_extra_problem, team_id_problem

_NAME = re.compile(r"^[A-Za-z0-9_.\-]+$")
_DEVICE = re.compile(r"^(auto|cpu|cuda(:[0-9]+)?)$")


def _no_fp16(value: Any) -> Any:
    """``run.precision = "fp16"`` refused with the reason (the literal's own error would only list the values)."""
    if value == "fp16":
        raise ValueError(
            '"fp16" is not offered: float16 needs loss scaling to train (gradients below 6e-8 vanish); bf16 '
            'has float32\'s range and needs none, on CPUs and GPUs alike; allowed: "fp32" or "bf16"'
        )
    return value


class RunSection(BaseModel):
    model_config = SECTION

    name: str = Field(
        "run",
        min_length=1,
        max_length=100,
        description="Name of the run; the run folder is `<output_dir>/<name>-<timestamp>`.",
        json_schema_extra={"allowed": "letters, digits, _ . - (1 to 100)"},
    )
    seed: int = Field(0, ge=0, lt=2**31, description="Seed for torch and the environments.")
    device: str = Field(
        "auto",
        json_schema_extra={"allowed": "auto, cpu, cuda, cuda:N"},
        description='Where the networks run: "auto" (CUDA when available), "cpu", "cuda" or "cuda:N".',
    )
    output_dir: str = Field("runs", min_length=1, description="Folder that receives run folders.")
    stop_at_return: float | None = Field(
        None,
        description="Stop once the mean return of the last return_window episodes reaches this value "
        "(counted only once that many episodes have ended).",
    )
    return_window: int = Field(
        100,
        ge=1,
        le=100_000,
        description="Finished episodes that stop_at_return, the rolling-return column and the summary average over.",
    )
    threads: Annotated[int | Literal["auto"], BeforeValidator(auto_or_count(1, 1024, "threads"))] = Field(
        "auto",
        description='torch intra-op threads. "auto": chosen for acting and for the update apart, from the FLOPs of '
        "each (a CNN or a wide ensemble updates on every physical core, small MLPs on one), the same on every "
        "run on a machine; a number pins every phase to it (at most the cores this process may use). "
        "validate --build, the run's first line and run.json say what auto chose.",
        json_schema_extra={"allowed": "auto, or 1 to the machine's cores"},
    )
    precision: Annotated[Literal["fp32", "bf16"], BeforeValidator(_no_fp16)] = Field(
        "fp32",
        description='"bf16": the networks\' forward passes (acting and the update, and their backward) run under '
        "bfloat16 autocast, with fp32 weights, optimizer state, losses and everything outside the networks; "
        "it pays for CNNs on CPUs with bf16 instructions (AVX512-BF16, AMX) and on CUDA, not for small MLPs.",
    )
    compile: Literal["off", "default", "reduce-overhead", "max-autotune"] = Field(
        "off",
        description="torch.compile every network (acting and the losses' forward and backward) with this "
        "mode; the first compilation is timed on a line of its own. reduce-overhead uses CUDA graphs on CUDA.",
    )
    parallel: Literal["replicate", "split"] = Field(
        "replicate",
        description='With several ranks (--nproc, torchrun): "replicate" gives every rank the whole config '
        "(its own num_envs and batches, gradients averaged: N times the frames per iteration and the env "
        'throughput); "split" shares the configured envs and batches out (the sizes of one process: each '
        "gradient step covers every rank's share, each sample weighing the same, while minibatches are drawn "
        "and advantages normalized within each share; the sizes must divide by the ranks). "
        "collector.total_frames counts every rank's frames either way.",
    )

    @field_validator("name")
    @classmethod
    def _name(cls, name: str) -> str:
        if not _NAME.match(name):
            odd = sorted({c for c in name if not _NAME.match(c)})
            what = "a space" if odd == [" "] else "the characters " + " ".join(repr(c) for c in odd)
            raise ValueError(f"{name!r} has {what}; allowed: letters, digits, _ . -")
        return name

    @field_validator("device")
    @classmethod
    def _device(cls, device: str) -> str:
        if not _DEVICE.match(device):
            raise ValueError(f"{device!r} is not a device; allowed: auto, cpu, cuda, cuda:N")
        return device


class EnvConfig(BaseModel):
    model_config = SECTION

    backend: Literal["gymnasium", "envpool"] = Field(
        "gymnasium",
        description='Who steps the envs: "gymnasium" (its registry, with vectorization), or "envpool": EnvPool\'s '
        "C++ vector envs (the envpool extra) for the ids it has (classic control, toy text, Box2D, MuJoCo, Atari "
        "as ALE/<Game>-v5 with ale-py's vector env arguments in kwargs, ...), reset in the step after an "
        "episode ends; kwargs are then EnvPool's options and vectorization is not used.",
    )
    id: str = Field(
        description='A registered gymnasium environment id, such as CartPole-v1 (with backend = "envpool", an id '
        "EnvPool has).",
        json_schema_extra={"allowed": "registered ids; not module:Env ids"},
    )
    num_envs: int = Field(8, ge=1, le=4096, description="Environments stepped side by side.")
    vectorization: Literal["sync", "async", "vector_entry_point"] = Field(
        "sync",
        description='"sync" steps envs in this process, "async" in worker processes, '
        '"vector_entry_point" uses the env\'s own batched implementation.',
    )
    kwargs: dict[str, Any] = Field(
        default_factory=dict, description="Keyword arguments passed to the environment constructor."
    )
    max_episode_steps: int | None = Field(
        None, ge=1, description="Truncate episodes after this many steps (default: the env's own limit)."
    )
    normalize_observation: bool = Field(
        False, description="Normalize observations by running mean and std (saved with the model)."
    )
    normalize_reward: bool = Field(
        False, description="Scale rewards by the running std of the discounted return (saved with the model)."
    )
    clip_observation: float = Field(10.0, gt=0, description="Clip normalized observations to [-clip, clip].")
    clip_reward: float | None = Field(
        None,
        gt=0,
        description="Clip the rewards an algorithm learns from to [-clip, clip] (1.0 on Atari, as "
        "Mnih et al. 2015); returns, stop_at_return and evaluation still count the env's own rewards.",
    )
    groups: dict[str, list[str]] | None = Field(
        None,
        description="Team envs: the agents of each group, by name (each agent in exactly one group; a group's "
        "agents share spaces, networks, an optimizer and metrics). Default: agents grouped by name without "
        "their trailing index (adversary_0, adversary_1 -> adversary).",
    )
    action_mask: Literal["auto", "info", "observation", "none"] = Field(
        "auto",
        description=f"Which actions the env allows at each step ({MASKED_ACTIONS} actions; {titled(WITH_MASKS)}): "
        '"info" reads info["action_mask"] (as Taxi gives it), "observation" the '
        '"action_mask" key of a Dict observation (the key is then not fed to the encoder), "auto" the '
        "observation's key when the space has one, else info's when the first reset gives one, else none "
        '(also none for algorithms or actions that cannot use masks); "none" ignores masks. A mask is [A] '
        "for Discrete(A), the flat concatenation [sum(nvec)] for MultiDiscrete, bool or 0/1 integers "
        "(True or 1: allowed).",
    )

    _plain_values = field_validator("kwargs")(classmethod(plain_values))

    @field_validator("id")
    @classmethod
    def _registered(cls, env_id: str, info: ValidationInfo) -> str:
        # A module-qualified id ("pkg.module:Env-v0") makes gymnasium import code:
        # a config file must never be able to do that.
        if ":" in env_id:
            raise ValueError(
                f"module-qualified env id {env_id!r} is not allowed: a config cannot import code; "
                "use a registered id such as 'CartPole-v1'"
            )
        if info.data.get("backend") == "envpool":
            # EnvPool's own ids: checked with the kwargs below, gymnasium's registry is not asked.
            return env_id
        missing = register_family(env_id) or team_extra_problem(env_id)
        if missing:
            raise ValueError(missing)
        if env_id not in gym.registry:
            # A team env's id (PettingZoo's registry, vmas/<scenario>), or why it is none.
            problem = team_id_problem(env_id, list(gym.registry))
            if problem:
                raise ValueError(problem)
        return env_id

    @model_validator(mode="after")
    def _vector_entry_point(self) -> EnvConfig:
        if self.backend == "envpool":
            problems = envpool_problems(self.id, self.kwargs)
            if problems:
                raise cross_field_error(problems)
            return self
        if self.vectorization == "vector_entry_point" and gym.spec(self.id).vector_entry_point is None:
            raise cross_field_error(
                [
                    (
                        "env.vectorization",
                        f'{self.id} has no vector entry point; use "sync" or "async"',
                    )
                ]
            )
        if self.vectorization == "vector_entry_point":
            problems = vector_kwargs_problems(self.id, self.kwargs)
            if problems:
                raise cross_field_error(problems)
        return self


class NetworkConfig(BaseModel):
    model_config = SECTION

    hidden_sizes: list[int] = Field(
        default_factory=lambda: [64, 64],
        max_length=16,
        json_schema_extra={"allowed": "up to 16 sizes, each 1 to 65536"},
        description="Hidden layer widths of every MLP, input and output sizes come from the env.",
    )
    policy_hidden_sizes: list[int] | None = Field(
        None,
        max_length=16,
        json_schema_extra={"allowed": "up to 16 sizes, each 1 to 65536"},
        description="Hidden widths of the policy MLP (default: hidden_sizes).",
    )
    value_hidden_sizes: list[int] | None = Field(
        None,
        max_length=16,
        json_schema_extra={"allowed": "up to 16 sizes, each 1 to 65536"},
        description="Hidden widths of the value MLP (default: hidden_sizes).",
    )
    activation: Literal["tanh", "relu", "elu", "gelu", "silu", "leaky_relu"] = Field(
        "tanh", description="Activation between hidden layers."
    )
    init: Literal["orthogonal", "default"] = Field(
        "orthogonal",
        description='"orthogonal": gain sqrt(2) hidden, 0.01 policy head, 1 value head; "default": torch\'s.',
    )
    log_std_init: float = Field(
        0.0,
        ge=-5,
        le=2,
        description="Initial log standard deviation of Gaussian policies; with [algo] use_sde, of gSDE's noise "
        "weights (Stable-Baselines3's default there: 0 for PPO, A2C and TRPO, -3 for SAC and TQC).",
    )
    full_std: bool = Field(
        True,
        description="With [algo] use_sde: one std per (hidden feature, action dimension) pair; false: one per "
        "hidden feature, shared by the action dimensions (Stable-Baselines3's full_std).",
    )
    use_expln: bool = Field(
        False,
        description="With [algo] use_sde: the std is expln(log_std) (exp below 0, log1p(x) + 1 above: positive, "
        "growing only logarithmically) instead of exp(log_std) (Stable-Baselines3's use_expln).",
    )
    encoder: Literal["auto", "flat", "nature_cnn", "impala_cnn"] = Field(
        "auto",
        description='What reads observations before the MLPs: "auto" flattens a vector, takes the Nature CNN '
        "(Mnih et al. 2015) for an image (IMPALA's below 36x36), a one-hot for Discrete and one encoder per "
        'key for a Dict; "flat" flattens any Box; "nature_cnn" or "impala_cnn" (Espeholt et al. 2018) for images.',
    )
    share_encoder: bool = Field(
        True, description="The on-policy actor-critic: the policy and the value read one encoder (false: one each)."
    )
    memory: Literal["none", "lstm", "gru"] = Field(
        "none",
        description=f'A recurrent core after the encoder, for {titled(WITH_MEMORY)}: "lstm" or "gru" carry a state '
        'from step to step (zeroed where an episode starts); "none" is a memoryless policy.',
    )
    memory_size: int = Field(256, ge=1, le=65536, description="Hidden units of each memory core.")
    memory_layers: int = Field(1, ge=1, le=8, description="Stacked layers of each memory core.")
    memory_shared: bool = Field(
        False,
        description="The policy and the value read one memory core (false: one each, as sb3-contrib's "
        "enable_critic_lstm); needs share_encoder.",
    )

    @field_validator("hidden_sizes", "policy_hidden_sizes", "value_hidden_sizes")
    @classmethod
    def _positive(cls, sizes: list[int] | None) -> list[int] | None:
        if sizes is not None and any(s < 1 or s > 65536 for s in sizes):
            raise ValueError(f"hidden sizes must be between 1 and 65536, got {sizes}")
        return sizes

    @property
    def policy_sizes(self) -> list[int]:
        return self.hidden_sizes if self.policy_hidden_sizes is None else self.policy_hidden_sizes

    @property
    def value_sizes(self) -> list[int]:
        return self.hidden_sizes if self.value_hidden_sizes is None else self.value_hidden_sizes


class RunConfig(BaseModel):
    """A whole run: what to train, where and how."""

    model_config = SECTION

    run: RunSection = section(RunSection, "Run identity and placement.")
    env: EnvConfig = Field(description="The environment.")
    network: NetworkConfig = section(NetworkConfig, "Network shapes.")
    algo: AlgoConfig = Field(description="The algorithm and its hyperparameters.")
    collector: CollectorConfig = section(CollectorConfig, "Rollout sizes and the budget of an online run.")
    data: DataConfig | None = Field(
        None, description="The dataset and the budget of an offline run (instead of [collector])."
    )
    optim: OptimConfig = section(OptimConfig, "Optimizer and schedule.")
    logger: LoggerConfig = section(LoggerConfig, "Metric backends.")
    timing: TimingConfig = section(TimingConfig, "Timing table output.")
    checkpoint: CheckpointConfig = section(CheckpointConfig, "Checkpoints for resuming a run.")
    eval: EvalConfig = section(EvalConfig, "Evaluation during training.")

    @model_validator(mode="after")
    def _sections_agree(self) -> RunConfig:
        problems = cross_section_problems(dict(self), given=self.model_fields_set)
        if problems:
            raise cross_field_error(problems)
        return self

    @property
    def offline(self) -> bool:
        """Whether the run learns from a dataset (``[data]``) rather than from envs (``[collector]``)."""
        return self.data is not None

    @property
    def iterations(self) -> int:
        """Training iterations: ``[data]``'s for an offline run, ``[collector]``'s otherwise."""
        return self.data.iterations if self.data is not None else self.collector.iterations


def cross_section_problems(
    sections: dict[str, Any], *, given: set[str] | frozenset[str] = frozenset()
) -> list[tuple[str, str]]:
    """Every problem between sections, as (dotted field, message) pairs.

    ``sections`` maps a section name to its validated model, or to None where the
    section itself is invalid: a check runs only when the sections it reads are valid,
    so that ``validate`` can report it beside the field errors of other sections.
    ``given`` names the sections the config file wrote (a default ``[collector]`` is not one).
    """
    env, collector, algo = sections.get("env"), sections.get("collector"), sections.get("algo")
    problems = (
        source_problems(algo, sections.get("data"), given)
        or team_problems(algo, env)
        or mask_problems(algo, env, sections.get("data"))
    )
    if problems:
        return problems
    problems = schedule_problems(sections)
    if sections.get("data") is not None:
        # An offline run has no rollouts: its algorithm checks itself against the env alone.
        problems += algo.check(collector=None, env=env) if algo is not None and env is not None else []
        return problems + memory_problems(algo, sections.get("network"), None, env)
    if env is not None and collector is not None:
        fpb = collector.frames_per_batch
        if fpb % env.num_envs:
            problems.append(
                (
                    "collector.frames_per_batch",
                    f"frames_per_batch ({fpb}) must be a multiple of env.num_envs ({env.num_envs})",
                )
            )
    if collector is not None and collector.total_frames < collector.frames_per_batch:
        problems.append(
            (
                "collector.total_frames",
                f"total_frames ({collector.total_frames}) must be at least "
                f"frames_per_batch ({collector.frames_per_batch})",
            )
        )
    if algo is not None and env is not None and collector is not None:
        # Each algorithm checks its own section against the others.
        problems += algo.check(collector=collector, env=env)
    return problems + memory_problems(algo, sections.get("network"), collector, env)


SECTIONS = tuple(RunConfig.model_fields)
