"""The sections of what a run does on a schedule besides learning: ``[timing]`` (the timing table),
``[checkpoint]`` and ``[eval]``, whose intervals an online run counts in env frames (``every_frames``)
and an offline one in gradient steps (``every_steps``)."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, BeforeValidator, Field

from rlcli.config.model import SECTION, auto_or_count

AUTO_EVAL_ENVS = 16
"""The fewest envs ``eval.num_envs = "auto"`` plays side by side. Measured in issue 34: the 100 final
episodes of ``sac_pendulum`` (one training env) took 3.4 s on one env, 0.52 s on 16, 0.45 s on 32;
ale-py's vector env costs 0.15 s an env to make, so more would cost an Atari evaluation more to start."""


def schedule_key(*, offline: bool) -> str:
    """The key an interval of ``[checkpoint]`` or ``[eval]`` takes in an offline run (``every_steps``, gradient
    steps) or an online one (``every_frames``, env frames): the other is refused, and never written."""
    return "every_steps" if offline else "every_frames"


def _interval(section: CheckpointConfig | EvalConfig, *, offline: bool) -> int:
    """``interval`` of ``[checkpoint]`` and ``[eval]``: the progress between two of them, ``every_steps``
    gradient steps offline, ``every_frames`` frames online."""
    return section.every_steps if offline else section.every_frames


class TimingConfig(BaseModel):
    model_config = SECTION

    enabled: bool = Field(True, description="Print timing tables during the run (the summary always has one).")
    every: int | None = Field(
        None, ge=1, description="Print the timing table every this many iterations (default: by wall time)."
    )
    seconds: float = Field(
        2.0,
        gt=0,
        le=3600,
        description="When every is unset, print the table at most once per this many seconds of wall time.",
    )


class CheckpointConfig(BaseModel):
    model_config = SECTION

    every_frames: int = Field(
        100_000,
        ge=0,
        description="Online runs: save a checkpoint after the first iteration at or past each multiple of this "
        "many frames; 0 saves only at the end and on SIGINT/SIGTERM (which save one in any case).",
    )
    every_steps: int = Field(
        100_000,
        ge=0,
        description="Offline runs: the same, in gradient steps.",
    )
    keep_last: int = Field(
        2,
        ge=1,
        le=1000,
        description="Checkpoints kept in checkpoints/; an older one is deleted only after the new one is complete.",
    )
    replay: bool = Field(
        True,
        description="Save an off-policy run's replay buffer with each checkpoint, so that a resumed run "
        "continues exactly (a memmap buffer is referenced, not copied); false resumes with an empty buffer.",
    )

    interval = _interval


class EvalConfig(BaseModel):
    model_config = SECTION

    every_frames: int = Field(
        0,
        ge=0,
        description="Online runs: evaluate the policy on an env of its own after the first iteration at or past "
        "each multiple of this many frames (eval/* columns); 0 turns in-training evaluation off.",
    )
    every_steps: int = Field(
        0,
        ge=0,
        description="Offline runs: the same, in gradient steps (an offline run also evaluates after its last "
        "iteration, since its return column is the evaluation's).",
    )
    episodes: int = Field(10, ge=1, le=10_000, description="Episodes per evaluation.")
    deterministic: bool = Field(
        True,
        description="Act with the policy's mode (greedy, mean action) rather than a sample.",
    )
    num_envs: Annotated[int | Literal["auto"], BeforeValidator(auto_or_count(1, 4096, "envs"))] = Field(
        "auto",
        description="Envs an evaluation (in training, final, rlcli eval) plays side by side, one batched policy "
        f'call a step, each a fixed share of the episodes; "auto": the run\'s env.num_envs, at least {AUTO_EVAL_ENVS}.',
        json_schema_extra={"allowed": "auto, or 1 to 4096"},
    )
    final_episodes: int = Field(
        100,
        ge=0,
        le=100_000,
        description="Episodes of the evaluation after the last iteration of a run that completes or is solved "
        "(run.json final_eval, the summary): the score RL-Zoo's table reports. The same episodes as "
        "rlcli eval RUN --episodes N. 0 turns it off.",
    )

    interval = _interval

    def envs(self, run_envs: int) -> int:
        """The envs an evaluation plays side by side when the run steps ``run_envs`` (its ``env.num_envs``);
        never more than its episodes take (the evaluator caps it)."""
        return max(run_envs, AUTO_EVAL_ENVS) if self.num_envs == "auto" else self.num_envs


def schedule_problems(sections: dict[str, Any]) -> list[tuple[str, str]]:
    """``every_frames`` written in an offline run, or ``every_steps`` in an online one: each counts
    what only its kind of run has (env frames, gradient steps)."""
    offline = sections.get("data") is not None
    right, wrong = schedule_key(offline=offline), schedule_key(offline=not offline)
    kind, unit = (
        ("an offline run ([data])", "gradient steps") if offline else ("an online run ([collector])", "env frames")
    )
    return [
        (f"{name}.{wrong}", f"{kind} counts {unit}: set {name}.{right} instead of {name}.{wrong}")
        for name in ("checkpoint", "eval")
        if sections.get(name) is not None and wrong in sections[name].model_fields_set
    ]
