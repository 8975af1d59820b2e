"""Memory cores: an LSTM or a GRU after the encoder, one shared by the policy and the value or one each,
stepped over time with its state zeroed where an episode starts.

The state of ``n`` envs is one tensor ``[n, cores, parts * layers, size]`` (``parts``: 2 for an LSTM's
hidden and cell states, 1 for a GRU's), the shape a :class:`~rlcli.carry.Carry` holds and a rollout
stores per step. :func:`unroll` is the one place that says how a state is reset: acting (one step) and
the update's backpropagation through time (a sequence) both go through it, so the update re-runs
exactly what acting ran.
"""

from __future__ import annotations

from typing import Literal, cast

import torch
from torch import nn

RNNS = {"lstm": nn.LSTM, "gru": nn.GRU}


def _split(rnn: nn.RNNBase, state: torch.Tensor):
    """torch's state of ``rnn`` from one core's ``[B, parts * layers, size]``: ``(h, c)`` for an LSTM,
    ``h`` for a GRU, each [layers, B, size] contiguous."""
    layers = rnn.num_layers
    h = state[:, :layers].transpose(0, 1).contiguous()
    if isinstance(rnn, nn.LSTM):
        return h, state[:, layers:].transpose(0, 1).contiguous()
    return h


def _join(rnn: nn.RNNBase, state) -> torch.Tensor:
    """One core's ``[B, parts * layers, size]`` from torch's state of ``rnn``."""
    parts = state if isinstance(rnn, nn.LSTM) else (state,)
    return torch.cat([part.transpose(0, 1) for part in parts], 1)


def unroll(rnn: nn.RNNBase, x: torch.Tensor, first: torch.Tensor, state: torch.Tensor):
    """Run ``rnn`` over a sequence, zeroing each env's state before a step that starts an episode.

    Args:
        x: [L, B, F] float32, the inputs, time first.
        first: [L, B] bool, the step starts an episode (the state is zeroed before it is read).
        state: [B, parts * layers, size] float32, the state before the first step.

    Returns:
        (outputs [L, B, size], the state after the last step [B, parts * layers, size]); over a
        sequence (L > 1) the state after is None: the update, which runs sequences, never reads it.
    """
    steps = x.shape[0]
    if steps == 1:
        return _one_step(rnn, x[0], state * ~first[0].view(-1, 1, 1))
    starts = first.any(1)
    starts[0] = True
    cuts = starts.nonzero().flatten().tolist()
    # Few episode starts: one call of torch's fused kernel between two of them. Many: each env's pieces
    # between episode starts side by side in one call, padded at their ends (a call costs more than the
    # wider batch on a CPU, whose kernel reorders its weights at each call: measured in the issue 33 note).
    if len(cuts) > PIECES_FROM:
        return _pieces(rnn, x, first, state), None
    outputs = []
    for begin, end in zip(cuts, cuts[1:] + [steps]):
        state = state * ~first[begin].view(-1, 1, 1)
        out, after = rnn(x[begin:end], _split(rnn, state))
        outputs.append(out)
        state = _join(rnn, after)
    return torch.cat(outputs) if len(outputs) > 1 else outputs[0], None


PIECES_FROM = 3
"""Cuts of a sequence (steps where some env starts an episode, the first step included) above which
:func:`unroll` runs the pieces side by side instead of one call per cut."""


def _pieces(rnn: nn.RNNBase, x: torch.Tensor, first: torch.Tensor, state: torch.Tensor) -> torch.Tensor:
    """:func:`unroll`'s outputs by one call: each env's run between two episode starts is a column of
    its own, from time 0 on, padded at its end; the first run of an env starts from ``state`` (zeroed if
    it starts an episode), every other from zeros. The padded steps come after each column's own and
    are never read, so the outputs and their gradients are those of the plain recurrence."""
    steps, batch = first.shape
    starts = first.t().clone()
    starts[:, 0] = True
    env_of, time_of = starts.nonzero(as_tuple=True)
    # Each element's piece (env-major order) and its step within the piece.
    piece = starts.reshape(-1).cumsum(0) - 1
    offset = torch.arange(steps, device=x.device).repeat(batch) - time_of[piece]
    padded = x.new_zeros(steps, env_of.numel(), x.shape[-1])
    padded = padded.index_put((offset, piece), x.transpose(0, 1).reshape(-1, x.shape[-1]))
    carried = (time_of == 0) & ~first[0, env_of]
    out, _ = rnn(padded, _split(rnn, state[env_of] * carried.to(state.dtype).view(-1, 1, 1)))
    return out[offset, piece].view(batch, steps, -1).transpose(0, 1)


def _one_step(rnn: nn.RNNBase, x: torch.Tensor, state: torch.Tensor):
    """:func:`unroll` of one step ([B, F] input): torch's fused cell per layer, a third of the time of the
    sequence kernel for one step on a CPU (it reorders its weights at each call); the same maths."""
    layers, lstm = rnn.num_layers, isinstance(rnn, nn.LSTM)
    hidden, cells = [], []
    for layer, weights in enumerate(rnn.all_weights):
        if lstm:
            h, c = torch.lstm_cell(x, (state[:, layer], state[:, layers + layer]), *weights)
            cells.append(c)
        else:
            h = torch.gru_cell(x, state[:, layer], *weights)
        hidden.append(h)
        x = h
    return x[None], torch.stack(hidden + cells, 1)


class MemoryCore(nn.Module):
    """The recurrent cores of an actor-critic: one shared by the policy and the value (the value reads
    the policy's core), or one each over their own features.

    Args:
        kind: "lstm" or "gru".
        features: the input sizes of the policy's and the value's cores (one entry when shared).
        size: hidden units of each core (its output size).
        layers: stacked layers of each core.
    """

    def __init__(self, kind: Literal["lstm", "gru"], features: tuple[int, ...], *, size: int, layers: int):
        super().__init__()
        self.kind, self.size, self.layers = kind, size, layers
        # torch's own initialization, as sb3-contrib's RecurrentPPO leaves its LSTMs (its orthogonal
        # initialization covers the MLPs and heads only).
        self.cores = nn.ModuleList(RNNS[kind](f, size, layers) for f in features)
        self.parts = 2 if kind == "lstm" else 1
        self.out_features = size

    def describe(self) -> str:
        """What the cores are, for people: kind, size, layers and who reads them."""
        layers = f"{self.layers} layer{'s' if self.layers > 1 else ''}"
        who = "one shared by the policy and the value" if self.shared else "one for the policy, one for the value"
        return f"{self.kind} of {self.size} units, {layers}, {who}"

    @property
    def shared(self) -> bool:
        return len(self.cores) == 1

    def initial(self, n: int, device: torch.device) -> torch.Tensor:
        """[n, cores, parts * layers, size] float32 zeros: ``n`` envs before their first step."""
        return torch.zeros(n, len(self.cores), self.parts * self.layers, self.size, device=device)

    def forward(
        self, policy_x: torch.Tensor, value_x: torch.Tensor, first: torch.Tensor, state: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor | None]:
        """(policy features, value features, state after), the features [L, B, size], of inputs
        ``policy_x`` and ``value_x`` ([L, B, F], the value's unread when shared), episode starts
        ``first`` ([L, B] bool) and ``state`` ([B, cores, parts * layers, size]) before the first step;
        the state after is None over a sequence (L > 1), as :func:`unroll` says."""
        # ModuleList indexes as nn.Module; every core was built from RNNS, so each is an RNNBase.
        cores = cast(list[nn.RNNBase], list(self.cores))
        policy_out, policy_state = unroll(cores[0], policy_x, first, state[:, 0])
        if self.shared:
            return policy_out, policy_out, None if policy_state is None else policy_state.unsqueeze(1)
        value_out, value_state = unroll(cores[1], value_x, first, state[:, 1])
        return policy_out, value_out, None if value_state is None else torch.stack((policy_state, value_state), 1)
