"""Action masks on their way from the envs to an agent: read from each reset's and step's ``info``
(:mod:`rlcli.envs.masks` puts them there) into the carry that the next ``act`` reads, and into a
collected batch as ``action_mask`` and ``next_action_mask``."""

from __future__ import annotations

import numpy as np
import torch
from gymnasium import spaces

from rlcli import keys
from rlcli.carry import Carry
from rlcli.envs.masks import KEY, mask_size
from rlcli.training_error import TrainingError


def as_masks(value) -> np.ndarray:
    """``value`` (a mask or masks, bool or integer 0/1) as a bool array (True: allowed)."""
    mask = np.asarray(value)
    return mask if mask.dtype == np.bool_ else mask != 0


def env_mask(info: dict) -> torch.Tensor:
    """The masks of an ``info`` on the CPU, as bool: [A] of one env's (``collect``'s single env), [N, A] of a
    vector env's (an evaluation's)."""
    return torch.from_numpy(as_masks(info[KEY]).copy())


def buffers(where: str | None, space: spaces.Space, steps: int, n: int) -> dict[str, torch.Tensor]:
    """The collector's host buffers of ``steps`` steps of ``n`` envs' masks for actions of ``space``; none
    without masks (``where`` None)."""
    if where is None:
        return {}
    size = mask_size(space)
    # Masks are looked for only for actions that take them (rlcli.algos.uses_masks).
    assert size is not None
    return {key: torch.zeros(steps, n, size, dtype=torch.bool) for key in (keys.ACTION_MASK, keys.NEXT_ACTION_MASK)}


def recorder(
    where: str | None,
    arrays: dict[str, np.ndarray],
    device: torch.device,
    *,
    per_step: int,
    steps: int,
    env_id: str = "",
    rank: int | None = None,
) -> MaskRecorder | None:
    """The :class:`MaskRecorder` of a collector whose masks come from ``where``; None without masks.
    ``per_step``: the frames of one step of every rank's envs; ``steps``: the steps of a rollout;
    ``env_id`` and ``rank`` (None with one process): what an error names."""
    if where is None:
        return None
    return MaskRecorder(
        where, arrays, device, per_iteration=per_step * steps, per_step=per_step, env_id=env_id, rank=rank
    )


class MaskRecorder:
    """The collector's part in masking: the masks of the observations acted on go into the carry before
    each ``act`` and into the batch beside them.

    Each mask acted on is checked: one that allows no action at all stops training
    (:class:`~rlcli.training_error.TrainingError`), naming the rank, the env (its index in this rank's
    vector env, and its id) and the step, before any policy forms a distribution over nothing.
    """

    def __init__(
        self,
        where: str,
        arrays: dict[str, np.ndarray],
        device: torch.device,
        *,
        per_iteration: int,
        per_step: int,
        env_id: str = "",
        rank: int | None = None,
    ):
        self.where = where
        """Where the masks come from: "info" or "observation" (:func:`rlcli.envs.masks.find_masks`)."""
        self.now, self.next = arrays[keys.ACTION_MASK], arrays[keys.NEXT_ACTION_MASK]
        self.device = device
        # Frames of one iteration and of one step, over every rank: to name the iteration and the step.
        self.per_iteration, self.per_step = per_iteration, per_step
        # This rank alone meets its envs' masks: an error names it (None with one process) and the env's id.
        self.env_id, self.rank = env_id, rank

    def start(self, info: dict, carry: Carry, frames: int) -> None:
        """The masks of a reset's ``info`` (the envs' first observations) into ``carry``."""
        mask = as_masks(info[KEY])
        self._check(mask, None, frames, 0)
        carry.mask = torch.from_numpy(mask.copy()).to(self.device)

    def resumed(self, carry: Carry) -> None:
        """Put a checkpoint's masks (saved on the CPU) where the policy reads them; a checkpoint from before
        masks, which has none, allows every action at the one step it resumes on."""
        if carry.mask is None:
            carry.mask = torch.ones(self.now.shape[1:], dtype=torch.bool)
        carry.mask = carry.mask.to(self.device)

    def acted(self, t: int, carry: Carry) -> None:
        """Store the masks that step ``t``'s actions were drawn under."""
        # start (or resumed) gave the carry its masks.
        assert carry.mask is not None
        self.now[t] = carry.mask.cpu().numpy()

    def stepped(self, t: int, info: dict, done: np.ndarray, same_step: bool, carry: Carry, frames: int) -> None:
        """After step ``t``: its next observations' masks into the batch and the masks acted on next into
        ``carry``. In SAME_STEP mode the envs that ended (``done``) have reset already: their final
        observation's mask is in ``info["final_info"]``. In NEXT_STEP mode ``info``'s mask is always the
        returned observation's."""
        mask = as_masks(info[KEY])
        self.next[t] = mask
        if same_step and done.any():
            self.next[t, done] = as_masks(info["final_info"][KEY])[done]
        # A NEXT_STEP env acts on its final observation in the reset step, an action never taken: its
        # mask may allow nothing (a game over).
        self._check(mask, None if same_step else done, frames, t + 1)
        carry.mask = torch.from_numpy(mask.copy()).to(self.device)

    def _check(self, mask: np.ndarray, skip: np.ndarray | None, frames: int, t: int) -> None:
        """Raise a TrainingError for the first env whose ``mask`` allows nothing (but those in ``skip``)."""
        empty = ~mask.any(-1)
        if skip is not None:
            empty &= ~skip
        if not empty.any():
            return
        env = int(np.flatnonzero(empty)[0])
        step = frames // self.per_step + t
        named = f"env {env} ({self.env_id})" if self.env_id else f"env {env}"
        raise TrainingError(
            frames // self.per_iteration + 1,
            f"the action mask of {named} at its step {step}",
            "all False (the env allows no action)",
            rank=self.rank,
        )
