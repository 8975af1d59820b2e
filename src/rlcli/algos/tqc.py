"""Truncated Quantile Critics (Kuznetsov et al., 2020): SAC's squashed-Gaussian actor and tuned
temperature over an ensemble of critics that each estimate ``quantiles`` quantiles of the return. The
target pools the target critics' quantiles at the next state, drops the largest
``top_quantiles_to_drop_per_net`` per critic (the truncation that controls overestimation), and every
critic regresses all of its quantiles onto the rest with the quantile Huber loss. Everything else (the
replay, the actor's and the temperature's steps, target updates, warm-up) is SAC's
(:class:`rlcli.algos.sac.SAC`), with this module's critic loss; the critics are the same batched
ensemble, with ``quantiles`` outputs each."""

from __future__ import annotations

from functools import partial

import torch
from tensordict import TensorDict

from rlcli import keys
from rlcli.algos.context import BuildContext
from rlcli.algos.sac import METRICS, SAC, TOTAL, Critics, SACAgent, squashed_agent
from rlcli.algos.spec import AlgorithmSpec
from rlcli.config.algos import TQCConfig
from rlcli.learning.advantages import bootstrapped_target
from rlcli.learning.off_policy import REPLAY_PHASES
from rlcli.learning.quantiles import quantile_huber
from rlcli.replay import box_replay


def truncated_target(next_quantiles: torch.Tensor, kept: int) -> torch.Tensor:
    """The ``kept`` smallest of every critic's quantiles pooled per row ([B, kept], ascending), from the
    target critics' ``next_quantiles`` ([E, B, N])."""
    pooled = next_quantiles.transpose(0, 1).reshape(next_quantiles.shape[1], -1)
    return pooled.sort(-1).values[:, :kept]


def tqc_critic_loss(
    agent: SACAgent,
    batch: TensorDict,
    next_action: torch.Tensor,
    next_log_prob: torch.Tensor,
    *,
    gamma: float,
    alpha: torch.Tensor,
    subset: torch.Tensor | None,
    kept: int,
) -> dict[str, torch.Tensor]:
    """The truncated quantile loss of every critic (Kuznetsov et al., 2020, eq. 10-11).

    Targets: ``y_j = r + discount * (1 - terminated) * (z_j(s', a') - alpha * log pi(a'|s'))`` for the
    ``kept`` smallest ``z_j`` of the E x N target quantiles at the actor's ``next_action``. The loss is
    the quantile Huber loss of each critic's N estimates against the ``kept`` targets, averaged over
    critics, estimates, targets and rows (as sb3-contrib's ``quantile_huber_loss(sum_over_quantiles=False)``),
    rows weighted by ``weight``. ``subset`` is always None here (every critic takes part).

    Reads what :func:`rlcli.algos.sac.sac_critic_loss` reads. Returns ``loss/critic``, ``stats/q_mean``
    (of every estimate), ``stats/td_abs`` and ``td_error`` ([B], detached: the mean over critics of the
    distance between the means of the estimates and of the targets, for priorities).
    """
    with torch.no_grad():
        pooled = truncated_target(agent.critic_target(batch[keys.NEXT_INPUT], next_action.detach()), kept)
        target = bootstrapped_target(batch, pooled - alpha * next_log_prob.detach().unsqueeze(-1), gamma=gamma)
    current = agent.critic(batch[keys.INPUT], batch[keys.ACTION])  # [E, B, N]
    per_row = quantile_huber(current.transpose(0, 1), target).mean((1, 2))
    weight = batch.get(keys.WEIGHT, None)
    loss = per_row.mean() if weight is None else (weight * per_row).mean()
    distance = (current.detach().mean(-1) - target.mean(-1)).abs()
    return {
        "loss/critic": loss,
        "stats/q_mean": current.detach().mean(),
        "stats/td_abs": distance.mean(),
        "td_error": distance.mean(0),
    }


PHASES = REPLAY_PHASES


def build_agent(cfg: TQCConfig, ctx: BuildContext) -> SACAgent:
    """SAC's actor and temperature, ``num_critics`` critics of ``quantiles`` outputs each (``value_sizes``),
    their target and the observation statistics, on the device."""
    return squashed_agent(cfg, ctx, critic_outputs=cfg.quantiles, gsde=cfg.use_sde)


def build(cfg: TQCConfig, ctx: BuildContext) -> SAC:
    """TQC for ``ctx``'s spaces (a Box action space): the agent, its optimizers and replay, on SAC's
    learner with :func:`tqc_critic_loss`.

    Raises:
        ConfigError: the buffer would not fit in free memory (or disk), or its folder is not writable.
    """
    agent = build_agent(cfg, ctx)
    # Every critic in each target (no random subsets); the actor maximises the mean over every critic's
    # quantiles (Kuznetsov et al., eq. 8).
    critics = Critics(partial(tqc_critic_loss, kept=cfg.kept_quantiles), subset=None, actor_q="mean")
    return SAC(cfg, ctx, critics, agent=agent, replay=box_replay(cfg, ctx, agent.obs_norm))


SPEC = AlgorithmSpec(
    config=TQCConfig,
    build=build,
    build_agent=build_agent,
    phases=PHASES,
    # SAC's rows: loss/critic is the truncated quantile loss here.
    metrics=METRICS,
    total=TOTAL,
)
