"""The algorithm table, the protocols every algorithm satisfies, and the check of an env's spaces
against what an algorithm supports.

An algorithm is one module ``rlcli/algos/<name>.py`` that ends with one frozen record,
``SPEC`` (an :class:`~rlcli.algos.spec.AlgorithmSpec`): its config model, ``build(cfg, ctx)`` and
``build_agent(cfg, ctx)`` (see :mod:`rlcli.algos.context`), the phases and metrics its ``learn``
reports, and its ``loss/total`` rule. What it can take (observation and action spaces, masks, memory,
sampling, data sources) is declared once on its torch-free config model, ``CAPABILITIES`` in
:mod:`rlcli.config.algos`, so that ``rlcli validate`` checks it without torch; the record's
``supports`` maps those names to gymnasium classes. :data:`ALGORITHMS` maps each ``[algo] name`` to its
record: adding an algorithm is its module, its config model, one line of that table and a preset.
``validate --build``, the bench suites and the generic tests read :data:`ALGORITHMS`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol, runtime_checkable

from gymnasium import spaces

from rlcli.algos import a2c, bc, cql, crossq, ddpg, dqn, ippo, iql, mappo, ppo, qrdqn, reinforce, sac, td3, tqc, trpo
from rlcli.algos.spec import AlgorithmSpec
from rlcli.config.algos import WITH_GSDE, gsde_on
from rlcli.config.errors import single
from rlcli.console import err_console
from rlcli.models.encoders import is_image, space_problem

if TYPE_CHECKING:
    import torch
    from tensordict import TensorDict

    from rlcli.carry import Carry, Remembers
    from rlcli.config.schema import RunConfig
    from rlcli.timing import Timer


class Agent(Protocol):
    """An algorithm's networks as one module, and the actions evaluation takes with them."""

    memory: Remembers | None
    """The policy's memory core (its state travels in a :class:`~rlcli.carry.Carry`), or None for a
    memoryless policy, which then reads nothing of the carry but its mask."""

    samples: bool
    """Whether ``actions`` with ``deterministic`` off draws from a distribution (``rlcli export --stochastic``
    writes such a draw); False where every draw is the mode: behaviour cloning's deterministic policy, DQN's
    ``epsilon_end = 0``, TD3's ``noise_scale = 0``."""

    def state_dict(self) -> dict: ...

    def actions(
        self, observation: torch.Tensor, *, deterministic: bool, generator: torch.Generator, carry: Carry | None = None
    ) -> torch.Tensor:
        """Evaluation actions for raw observations ([N, *obs] float32), for the env as the algorithm's
        ``act`` gives them ([N] int64 for Discrete, [N, A] float32 in env units for Box; a Gaussian
        may leave the bounds, and the caller clips as the collector does).

        ``carry`` (:mod:`rlcli.carry`) holds the envs' action masks and the policy's memory: a policy
        with memory reads its state there and writes the state after the step back; None is a
        carry of no masks and fresh memory.

        ``deterministic`` takes the policy's mode (argmax, the Gaussian's mean, the actor's output);
        otherwise actions are drawn with ``generator`` from the policy as trained, without any
        collection schedule: no warm-up, no decaying epsilon, no OU state. Changes no statistics;
        runs under ``torch.no_grad``.
        """
        ...


class Algorithm(Protocol):
    """What the trainer and checkpoints need of an algorithm.

    The trainer loop is the same for every family: the source hands the trainer a batch (the collector's
    ``[T, N]`` steps, taken with :meth:`Collects.act`, or a dataset's) and the trainer hands it to ``learn``.
    On-policy methods compute their advantages and update there; off-policy methods extend their replay
    buffer and take their gradient steps. Offline-only algorithms (BC, IQL, CQL) have no ``act``: nothing
    collects with them.
    """

    agent: Agent
    """Every network, targets and normalization statistics included: one state_dict covers them.
    An :class:`Agent`: evaluation plays its ``actions``."""

    def learn(self, batch: TensorDict, timer: Timer) -> dict[str, float]:
        """Everything an iteration does with a fresh ``[T, N]`` batch; returns the row terms."""
        ...

    def state_dict(self, *, replay: bool = True) -> dict:
        """Optimizers, schedules, generators and counters (the agent's weights are saved apart);
        with ``replay``, an off-policy algorithm's stored transitions too (on-policy ones have none)."""
        ...

    def load_state_dict(self, state: dict) -> None: ...


class Collects(Algorithm, Protocol):
    """An algorithm the collector steps envs with: every one that learns from envs."""

    def act(self, observation: torch.Tensor, generator: torch.Generator, carry: Carry | None = None) -> TensorDict:
        """Actions for raw observations ([N, *obs] float32), with whatever ``learn`` needs stored
        beside them (PPO: ``log_prob`` and ``value``; with memory, the state acted from). Batch size
        [N]; no statistics change. ``carry`` as for :meth:`Agent.actions`, its memory advanced."""
        ...


# Runtime-checkable so that code holding a plain Algorithm (a built Run's) can narrow to it.
@runtime_checkable
class Benchable(Algorithm, Protocol):
    """An algorithm with the two hooks that the bench's loss suite (:mod:`rlcli.bench.suites.learning`) and
    the generic tests (``tests/algos/test_generic.py``) call: every algorithm of :data:`ALGORITHMS`.

    ``ingest_and_sample`` gives a minibatch as ``learn`` draws it; ``loss`` gives its terms as the
    algorithm's update forms them (a replay algorithm's ``update`` and ``loss`` call one term function):
    what is timed and tested is what trains.
    """

    def ingest_and_sample(self, batch: TensorDict, size: int, generator: torch.Generator) -> TensorDict:
        """Take in a fresh ``[T, N]`` ``batch`` as ``learn`` would, then return a minibatch of ``size`` rows
        drawn with ``generator``, as ``learn`` would draw it.

        An off-policy algorithm stores ``batch`` in its replay and returns a normalized replay sample
        (batch size ``[size]``): ``input``, ``action``, ``reward``, ``next_input``, ``terminated``, and
        ``discount`` (n-step), ``weight`` (prioritized) and ``next_action_mask`` (masks) where the run
        has them. An on-policy one writes its advantages and value targets into ``batch`` and returns
        rows of it (``[size]``; sequences ``[L, C]`` with memory) with ``advantage`` and ``value_target``
        beside what its ``act`` stored.
        """
        ...

    def loss(self, minibatch: TensorDict) -> dict[str, torch.Tensor]:
        """The named terms of one ``minibatch`` from :meth:`ingest_and_sample`, all on the same weights
        (no step is taken, no counter moves): ``loss/...`` terms (scalars, with gradients where a step
        minimises them) and ``stats/...`` terms (scalars), each a column of the algorithm's ``METRICS``,
        and ``loss/total``, the scalar to minimise (the algorithm's rule: PPO weighs its terms, a replay
        algorithm sums its ``TOTAL`` terms). A replay algorithm's terms also hold ``td_error`` ([B],
        detached: what its priorities are updated from) where its critic loss gives one.
        """
        ...


def _serves(supports: dict, role: str, space: spaces.Space) -> bool:
    """Whether a record's ``supports`` takes ``space`` in ``role`` (Box, MultiDiscrete and MultiBinary
    actions must be 1-D, MultiDiscrete ones start at 0)."""
    return isinstance(space, supports.get(role, ())) and (role == "observation" or _flat(space))


def _flat(space: spaces.Space) -> bool:
    """Whether an action ``space`` is one the heads read: 1-D where it has a shape, from 0 for MultiDiscrete."""
    if isinstance(space, spaces.MultiDiscrete):
        return space.nvec.ndim == 1 and not space.start.any()
    if isinstance(space, (spaces.Box, spaces.MultiBinary)):
        return len(space.shape) == 1
    return True


# How check_spaces names an action space class whose instances must be 1-D.
_ONE_D = {
    spaces.Box: "1-D Box",
    spaces.MultiDiscrete: "1-D MultiDiscrete from 0",
    spaces.MultiBinary: "1-D MultiBinary",
}


ALGORITHMS: dict[str, AlgorithmSpec] = {
    "ppo": ppo.SPEC,
    "a2c": a2c.SPEC,
    "reinforce": reinforce.SPEC,
    "trpo": trpo.SPEC,
    "dqn": dqn.SPEC,
    "qrdqn": qrdqn.SPEC,
    "sac": sac.SPEC,
    "td3": td3.SPEC,
    "ddpg": ddpg.SPEC,
    "tqc": tqc.SPEC,
    "crossq": crossq.SPEC,
    "bc": bc.SPEC,
    "iql": iql.SPEC,
    "cql": cql.SPEC,
    "ippo": ippo.SPEC,
    "mappo": mappo.SPEC,
}
"""Each algorithm's record, by its config ``name``, in the order of ``rlcli.config.algos.ALGO_CONFIGS``
(the models that declare capabilities; ``tests/algos/test_generic.py`` checks both hold the same
algorithms). The names are this package's own, never read from a config file (a config can only pick
one of them)."""


def check_spaces(
    name: str,
    env_id: str,
    observation: spaces.Space,
    action: spaces.Space,
    source: str | None,
    *,
    encoder: str = "auto",
    normalize: bool = False,
    offline: bool = False,
    gsde: bool = False,
) -> None:
    """Raise a ConfigError naming the env, the space, what is supported and which algorithms (of those
    that learn from envs, or with ``offline`` from a dataset) serve it, unless algorithm ``name``'s
    ``supports`` serves both spaces, ``encoder`` (``[network] encoder``) can read the observations,
    observation normalization (``normalize``) applies to them, and gSDE (``gsde``, ``[algo] use_sde``)
    to the actions. Normalizing images is allowed, with one warning: their encoder scales raw frames
    by 1/255 itself."""
    supports = ALGORITHMS[name].supports
    for role, space, path in (("observation", observation, "env.id"), ("action", action, "algo.name")):
        if not _serves(supports, role, space):
            allowed = supports[role]
            names = ", ".join(_ONE_D.get(c, c.__name__) if role == "action" else c.__name__ for c in allowed)
            kind = "dataset" if offline else "collector"
            others = [
                other
                for other, spec in ALGORITHMS.items()
                if _serves(spec.supports, role, space) and kind in spec.capabilities.sources
            ]
            serving = (
                f"; the algorithms that learn from {'a dataset' if offline else 'envs'} with such "
                f"{role}s: {', '.join(others)}"
                if others
                else ""
            )
            raise single(
                source,
                f"{env_id} has {role} space {space}, which {name} does not support; "
                f"supported {role} spaces: {names}{serving}",
                path=path,
            )
    if gsde and not isinstance(action, spaces.Box):
        raise single(
            source,
            f"{env_id} has action space {action}: gSDE (use_sde) perturbs continuous actions and needs a Box "
            f"action space (the algorithms with gSDE: {', '.join(WITH_GSDE)}); set use_sde = false",
            path="algo.use_sde",
        )
    problem = space_problem(observation, encoder)
    if problem:
        raise single(source, f"{env_id} has observation space {observation}: {problem}", path="network.encoder")
    if normalize and not isinstance(observation, spaces.Box):
        raise single(
            source,
            f"{env_id} has {type(observation).__name__} observations, which are never normalized "
            "(a one-hot or per-key encoder reads them); set normalize_observation = false",
            path="env.normalize_observation",
        )
    if normalize and is_image(observation):
        err_console.print(
            f"warning: {env_id} has image observations and normalize_observation is on: frames are "
            "standardized by running statistics instead of scaled by 1/255 (off is the usual "
            "choice for images)",
            markup=False,
        )


def check_run_spaces(cfg: RunConfig, observation: spaces.Space, action: spaces.Space, source: str | None) -> None:
    """:func:`check_spaces` for the run ``cfg`` describes: its algorithm, env, encoder, observation
    normalization, gSDE and data source (the algorithms its message names learn from the same)."""
    check_spaces(
        cfg.algo.name,
        cfg.env.id,
        observation,
        action,
        source,
        encoder=cfg.network.encoder,
        normalize=cfg.env.normalize_observation,
        gsde=gsde_on(cfg.algo),
        offline=cfg.offline,
    )


def uses_masks(name: str, env, action: spaces.Space, source: str | None, *, offline: bool) -> bool:
    """Whether algorithm ``name`` looks for the action masks of an env of ``env`` (an EnvConfig) with
    ``action`` actions: ``[env] action_mask`` asks for them (``auto`` too), the algorithm learns from
    envs and masks actions of that space. ``auto`` is then silently none.

    Raises:
        ConfigError: ``action_mask`` names where masks are ("info", "observation") for actions or an
            algorithm that cannot use them; names those that can.
    """
    if env.action_mask == "none":
        return False
    serving = [
        other
        for other, spec in ALGORITHMS.items()
        if _serves(spec.supports, "action_mask", action) and "collector" in spec.capabilities.sources
    ]
    if name in serving and not offline:
        return True
    if env.action_mask == "auto":
        return False
    if not serving:
        users = [other for other, spec in ALGORITHMS.items() if spec.capabilities.masks is not None]
        message = (
            f"{env.id} has action space {action}: action masks need Discrete or 1-D MultiDiscrete actions "
            f"(the algorithms that use masks: {', '.join(users)})"
        )
    else:
        how = "learns from a dataset" if offline else "does not take them"
        message = f"{name} cannot use action masks ({how}); the algorithms that can, for {action} actions: "
        message += ", ".join(serving)
    raise single(source, f'{message}; set action_mask = "none" (or "auto")', path="env.action_mask")
