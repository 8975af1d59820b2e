"""Replay storage for stacked frames (Atari): each frame stored once, stacks rebuilt when sampled.

A stack of S frames and the next one share S - 1 frames, so storing both observations costs 2S
frames a transition. This buffer keeps, per env step, only the newest frame of the observation,
and rebuilds both stacks of a sampled transition with one gather (as Dopamine and DQN-Zoo do):
7,071 bytes a transition of 84x84 frames (the frame, two flags, action, reward, terminated).

It relies on what ale-py's vector env does: batches arrive in time order, ``[T, N]`` for the same
N envs, which reset in the next step (NEXT_STEP), so every row's ``next_observation`` is the next
row's ``observation``, reset steps (``valid`` False) included. The ring is time-major: slot s holds
step s of every env, and the stack of step s ends with the frames of steps s - S + 1 .. s.

Episode starts: the step after a reset step (and the first step ever) acts on a reset observation.
ale-py 0.12.1's AtariVectorEnv fills the S - 1 older slots of a reset stack with zeros (at
``reset()`` and at every autoreset; checked by stepping it), so a rebuilt stack gets zeros for
the frames before its episode's start, never the previous episode's.

Breaks: the stacks of a batch's first S steps, the ones that reach frames of earlier batches, are
rebuilt when written and compared with the env's, and the stack of its first step with the last
batch's last next observation. They differ only after a break (envs reset or restored between two
batches, a buffer loaded without its steps): the steps whose stacks differ are never sampled,
and a first observation with zeros in its older slots starts an episode, so stays exact.

Never sampled: reset steps, steps cut by a break, the newest step (its next observation comes
with the next batch) and, once the ring is full, the oldest S - 1 (the next write overwrites their
older frames). Only 1-step transitions: an n-step one's bootstrap step is not the next step, so
``n_step`` > 1 must keep whole observations (:class:`rlcli.replay.storage.ReplayBuffer`).
"""

from rlcli.replay.frames.buffer import FrameStackBuffer
from rlcli.replay.frames.layout import frame_storage_bytes

__all__ = ["FrameStackBuffer", "frame_storage_bytes"]
