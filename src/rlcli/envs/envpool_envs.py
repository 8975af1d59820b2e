"""EnvPool's C++ vector envs (``[env] backend = "envpool"``) as gymnasium vector envs: the same spaces,
``terminated`` and ``truncated`` apart, seeds, and Atari played by the rules of ale-py's vector env.

EnvPool steps every env of a pool in C++ threads and resets an env in the step after its episode ended
(gymnasium's ``NEXT_STEP``: that step's action is ignored and its observation is the next episode's first),
which the collector already handles for ale-py's vector env. The final observation of an episode is the
one returned with its end, so nothing is lost.
"""

from __future__ import annotations

import contextlib
import difflib
import warnings
from collections.abc import Iterator
from typing import Any

import numpy as np
from gymnasium import spaces
from gymnasium.vector import AutoresetMode, VectorEnv
from gymnasium.vector.utils import batch_space

from rlcli.envs.families import ATARI, LIFE_LOST, env_family

EXTRA = "envpool"

ATARI_OPTIONS = {
    "frameskip": "frame_skip",
    "stack_num": "stack_num",
    "img_height": "img_height",
    "img_width": "img_width",
    "grayscale": "gray_scale",
    "noop_max": "noop_max",
    "repeat_action_probability": "repeat_action_probability",
    "num_threads": "num_threads",
    "thread_affinity_offset": "thread_affinity_offset",
    "full_action_space": "full_action_space",
    "use_fire_reset": "use_fire_reset",
    "reward_clipping": "reward_clip",
}
"""ale-py's vector env argument -> EnvPool's Atari option of the same meaning (ale-py's vector env is a port of
EnvPool's Atari env; both default to the same values). ``max_num_frames_per_episode`` becomes EnvPool's
``max_episode_steps`` (in agent steps: frames over the frame skip), ``life_loss_info`` is played by
:class:`EnvPoolVector` itself, ``maxpool`` has to stay true (EnvPool always max-pools the last two frames),
and ``episodic_life`` stays refused as for ale-py."""

_ATARI_OWN = ("max_num_frames_per_episode", "life_loss_info", "maxpool", "episodic_life")
"""ale-py's vector env arguments that :func:`envpool_options` maps by hand (see ATARI_OPTIONS)."""

_INTERNAL = frozenset(
    {"num_envs", "batch_size", "num_threads", "max_num_players", "thread_affinity_offset", "base_path", "seed"}
    | {"env_seed", "gym_reset_return_info", "reward_threshold", "task"}
)
"""EnvPool config keys that are not an env's options: rlcli sets them (sizes, seeds) or nobody should."""


def envpool_id(env_id: str) -> str:
    """EnvPool's id for ``env_id``: ale-py's ``ALE/Pong-v5`` is EnvPool's ``Pong-v5``; any other id is its own."""
    return env_id.removeprefix("ALE/") if env_family(env_id) is ATARI else env_id


def envpool_problems(env_id: str, kwargs: dict[str, Any]) -> list[tuple[str, str]]:
    """(path, message) for each reason why EnvPool cannot make ``env_id`` with ``kwargs`` (rlcli's names: ale-py's
    vector env arguments for an ``ALE/`` id, EnvPool's options otherwise); empty when it can."""
    try:
        import envpool
    except ImportError as exc:
        return [("env.backend", f'backend "envpool" needs the envpool package ({exc}); {install_hint()}')]
    task = envpool_id(env_id)
    if task not in envpool.list_all_envs():
        return [
            (
                "env.id",
                f"EnvPool {envpool.__version__} has no env {task!r}; its families: {', '.join(families())}. "
                'Use an id it lists (envpool.list_all_envs()) or backend = "gymnasium"',
            )
        ]
    allowed = allowed_options(env_id)
    problems = []
    for key, value in kwargs.items():
        if key not in allowed:
            close = difflib.get_close_matches(key, allowed, n=3)
            hint = f"did you mean {', '.join(close)}? " if close else ""
            problems.append(
                (
                    f"env.kwargs.{key}",
                    f'backend "envpool" cannot express {key!r} for {env_id}; {hint}'
                    f'options it can: {", ".join(sorted(allowed))} (or backend = "gymnasium")',
                )
            )
        elif key == "maxpool" and value is not True:
            problems.append(("env.kwargs.maxpool", 'backend "envpool" always max-pools the last two frames'))
    return problems


def install_hint() -> str:
    """How to install the envpool extra."""
    return f"install the {EXTRA} extra: pip install 'rlcli[{EXTRA}]' (pip install -e '.[{EXTRA}]' in a clone)"


def families() -> list[str]:
    """EnvPool's env families (its subpackages with registered ids), with how many ids each has."""
    from envpool.registration import registry

    counts: dict[str, int] = {}
    for entry in registry.specs.values():
        family = entry[0].split(".")[1]
        counts[family] = counts.get(family, 0) + 1
    return [f"{family} ({count})" for family, count in sorted(counts.items())]


def allowed_options(env_id: str) -> list[str]:
    """The ``[env] kwargs`` names rlcli passes to EnvPool for ``env_id``."""
    if env_family(env_id) is ATARI:
        return list(ATARI_OPTIONS) + list(_ATARI_OWN)
    import envpool

    with _quiet():
        config = envpool.make_spec(envpool_id(env_id)).config
    return [key for key in config._fields if key not in _INTERNAL]


@contextlib.contextmanager
def _quiet() -> Iterator[None]:
    """Gymnasium's warnings silenced: EnvPool builds float32 boxes from float64 bounds, and gymnasium warns of
    the cast for every space it makes."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", ".*precision lowered by casting", UserWarning)
        yield


def envpool_options(env_id: str, kwargs: dict[str, Any]) -> tuple[dict[str, Any], bool]:
    """EnvPool's options for ``kwargs`` (checked by :func:`envpool_problems`) and whether lost lives are split
    from game ends (``life_loss_info``)."""
    if env_family(env_id) is not ATARI:
        return dict(kwargs), False
    options = {ATARI_OPTIONS[key]: value for key, value in kwargs.items() if key in ATARI_OPTIONS}
    if options.get("noop_max") == 0:
        # EnvPool draws 0..noop_max-1 no-ops (and crashes at 0), then one fewer where it presses FIRE: 1 plays
        # ale-py's 0 in every game with FIRE, and one no-op frame in the others.
        options["noop_max"] = 1
    frames = kwargs.get("max_num_frames_per_episode")
    if frames is not None:
        options["max_episode_steps"] = max(1, frames // kwargs.get("frameskip", 4))
    if "max_episode_steps" in kwargs:
        options["max_episode_steps"] = kwargs["max_episode_steps"]
    # Lost lives always end the pool's episode: its reset step then continues the game (no-ops, and one FIRE
    # frame with use_fire_reset), so that a policy that never chooses FIRE cannot stall a game; EnvPoolVector
    # hides the ends that are not the game's, and reports them as lost lives with life_loss_info.
    options["episodic_life"] = True
    return options, bool(kwargs.get("life_loss_info"))


class EnvPoolVector(VectorEnv):
    """``num_envs`` envs of one EnvPool pool, as a gymnasium vector env that resets in the step after an
    episode ends (``NEXT_STEP``).

    - Seeds: ``reset(seed=s)`` builds the pool with seed ``s`` (EnvPool seeds env ``i`` with ``s + i``, as
      gymnasium's vector envs do); ``reset()`` resets the pool in place.
    - Box actions are float32 (what gymnasium's own envs take), cast to the pool's dtype at each step.
    - Atari: the pool ends an episode at each lost life and continues the game in the next step (its reset
      step, pressing FIRE); here ``terminated`` is the end of the game, and with ``life_loss_info`` (``split``)
      a lost life is ``info["life_lost"]`` (as :class:`rlcli.envs.AtariLives` gives it for ale-py).
    """

    metadata = {"autoreset_mode": AutoresetMode.NEXT_STEP}
    native_state = True
    """The envs' state lives in C++ (:mod:`rlcli.collectors.envstate`): a resumed run reseeds them."""

    def __init__(self, env_id: str, num_envs: int, kwargs: dict[str, Any]):
        import envpool

        self.task = envpool_id(env_id)
        self.options, self.split = envpool_options(env_id, kwargs)
        self.atari = env_family(env_id) is ATARI
        self.num_envs = num_envs
        with _quiet():
            spec = envpool.make_spec(self.task, num_envs=num_envs, **self.options)
            self.single_observation_space = spec.gymnasium_observation_space
            action_space = spec.gymnasium_action_space
        self.action_dtype = action_space.dtype
        if isinstance(action_space, spaces.Box):
            low, high = action_space.low.astype(np.float32), action_space.high.astype(np.float32)
            action_space = spaces.Box(low, high, action_space.shape, np.float32)
        self.single_action_space = action_space
        self.observation_space = batch_space(self.single_observation_space, num_envs)
        self.action_space = batch_space(self.single_action_space, num_envs)
        self.pool: Any = None

    def _make(self, seed: int) -> None:
        import envpool

        if self.pool is not None:
            self.pool.close()
        with _quiet():
            self.pool = envpool.make_gymnasium(self.task, num_envs=self.num_envs, seed=seed, **self.options)

    def reset(self, *, seed: int | list[int] | None = None, options: dict | None = None):
        if isinstance(seed, list):
            seed = seed[0]
        if seed is not None or self.pool is None:
            # EnvPool takes int32 seeds, and seeds env i with seed + i.
            self._make(0 if seed is None else int(seed) % (2**31 - self.num_envs))
        with _quiet():
            obs, info = self.pool.reset()
        return obs, self._info(info)

    def step(self, actions):
        actions = np.asarray(actions).astype(self.action_dtype, copy=False)
        obs, reward, terminated, truncated, raw = self.pool.step(actions)
        terminated = np.asarray(terminated, dtype=bool)
        truncated = np.asarray(truncated, dtype=bool)
        info = self._info(raw)
        if self.atari:
            # The pool's own game end; a termination without it lost a life and the game goes on.
            game_over = np.asarray(raw["terminated"], dtype=bool)
            if self.split:
                info[LIFE_LOST] = terminated & ~game_over
            terminated = terminated & game_over
        return obs, np.asarray(reward, dtype=np.float64), terminated, truncated, info

    @staticmethod
    def _info(info: dict) -> dict:
        # The pool's bookkeeping (which env, which player, the Atari RAM, its own game end) is not the env's
        # information.
        return {key: value for key, value in info.items() if key not in ("env_id", "players", "ram", "terminated")}

    def close_extras(self, **kwargs):
        if self.pool is not None:
            self.pool.close()
            self.pool = None
