"""Observation encoders: from an observation in its space's own dtype to a flat float feature vector.

:func:`build_encoder` is the one place that turns an observation space into the first layers of
every network: a flat pass-through for vector observations, a one-hot for ``Discrete``, a CNN for
images (uint8 frames become float and are scaled by 1/255 here, on the device, after the copy
from the host), and one encoder per key, concatenated, for ``Dict`` observations (as
Stable-Baselines3's ``CombinedExtractor``). Each encoder has ``out_features``.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, TypeAlias, TypeGuard, cast

import numpy as np
import torch
import torch.nn.functional as F
from gymnasium import spaces
from torch import nn

from rlcli.observations import shape_of

if TYPE_CHECKING:
    from rlcli.config.schema import NetworkConfig


class ImageLayout:
    """How an image Box lays out its pixels: channels first ``(C, H, W)``, channels last
    ``(H, W, C)``, one grey plane ``(H, W)``, or stacked colour frames ``(S, H, W, C)``
    (ale-py's RGB frame stacks), always read as ``C' x H x W`` planes."""

    def __init__(self, shape: tuple[int, ...]):
        self.shape = shape
        if len(shape) == 2:
            self.channels, self.height, self.width, self.kind = 1, shape[0], shape[1], "grey"
        elif len(shape) == 4:
            self.channels, self.height, self.width, self.kind = shape[0] * shape[3], shape[1], shape[2], "stacked"
        elif shape[0] <= shape[-1]:
            # The smaller of the outer dimensions holds the channels (Stable-Baselines3's rule).
            self.channels, self.height, self.width, self.kind = shape[0], shape[1], shape[2], "first"
        else:
            self.channels, self.height, self.width, self.kind = shape[2], shape[0], shape[1], "last"

    def planes(self, x: torch.Tensor) -> torch.Tensor:
        """``x`` ([B, *shape]) as [B, C', H, W]."""
        if self.kind == "grey":
            return x.unsqueeze(1)
        if self.kind == "last":
            return x.permute(0, 3, 1, 2)
        if self.kind == "stacked":
            return x.permute(0, 1, 4, 2, 3).reshape(x.shape[0], self.channels, self.height, self.width)
        return x


def is_image(space: spaces.Space) -> TypeGuard[spaces.Box]:
    """A Box of uint8 pixels in [0, 255] with 2 to 4 dimensions (grey, channels first or last, stacked)."""
    return (
        isinstance(space, spaces.Box)
        and space.dtype == np.uint8
        and 2 <= len(space.shape) <= 4
        and bool(np.all(space.low == 0))
        and bool(np.all(space.high == 255))
    )


class Flat(nn.Module):
    """Observations flattened to [B, prod(shape)] float32; a 1-D float32 Box passes through as it is."""

    def __init__(self, shape: tuple[int, ...]):
        super().__init__()
        self.dims = len(shape)
        self.out_features = int(math.prod(shape))

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        if self.dims == 0:
            # A scalar Box: one feature, [*B] -> [*B, 1].
            obs = obs.unsqueeze(-1)
        elif self.dims > 1:
            obs = obs.flatten(-self.dims)
        return obs if obs.dtype == torch.float32 else obs.float()


class OneHot(nn.Module):
    """A ``Discrete(n)`` index ([B] int64) as a one-hot [B, n] float32."""

    def __init__(self, space: spaces.Discrete):
        super().__init__()
        self.n, self.start = int(space.n), int(space.start)
        self.out_features = self.n

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        return F.one_hot((obs.long() - self.start).clamp_(0, self.n - 1), self.n).float()


def _conv(fan_in: int, fan_out: int, kernel: int, stride: int, orthogonal: bool, padding: int = 0) -> nn.Conv2d:
    layer = nn.Conv2d(fan_in, fan_out, kernel, stride, padding=padding)
    if orthogonal:
        nn.init.orthogonal_(layer.weight, math.sqrt(2))
        if layer.bias is not None:
            nn.init.zeros_(layer.bias)
    return layer


class _Pixels(nn.Module):
    """What both CNNs share: frames to [B, C, H, W] float32 (uint8 scaled by 1/255 here, on the
    device), then ``body``, then a ReLU'd linear layer of ``out_features``."""

    def __init__(self, kind: str, layout: ImageLayout, body: nn.Module, out_features: int, orthogonal: bool):
        super().__init__()
        self.kind, self.layout = kind, layout
        self.body = body
        with torch.no_grad():
            flat = body(torch.zeros(1, layout.channels, layout.height, layout.width)).shape[1]
        # Channels-last convolutions: a quarter faster forward and backward on a CPU (oneDNN) than
        # the default layout, the same maths (benchmarks in the issue 19 note).
        # torch's stubs omit Module.to's memory_format keyword, which torch documents and accepts.
        body.to(memory_format=torch.channels_last)  # type: ignore[call-overload]
        self.head = nn.Linear(flat, out_features)
        if orthogonal:
            nn.init.orthogonal_(self.head.weight, math.sqrt(2))
            nn.init.zeros_(self.head.bias)
        self.out_features = out_features

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        """[*B, *shape] frames -> [*B, out_features]."""
        lead = obs.shape[: obs.dim() - len(self.layout.shape)]
        x = self.layout.planes(obs.reshape(-1, *self.layout.shape))
        # Normalized (explicitly asked) frames arrive as float already: only raw uint8 is rescaled.
        x = x.float() / 255.0 if obs.dtype == torch.uint8 else x.float()
        x = x.contiguous(memory_format=torch.channels_last)
        return F.relu(self.head(self.body(x))).reshape(*lead, self.out_features)


def nature_cnn(layout: ImageLayout, orthogonal: bool) -> _Pixels:
    """The DQN network of Mnih et al. (2015): 32 8x8/4, 64 4x4/2 and 64 3x3/1 convolutions, ReLU, 512 units."""
    body = nn.Sequential(
        _conv(layout.channels, 32, 8, 4, orthogonal),
        nn.ReLU(),
        _conv(32, 64, 4, 2, orthogonal),
        nn.ReLU(),
        _conv(64, 64, 3, 1, orthogonal),
        nn.ReLU(),
        nn.Flatten(),
    )
    return _Pixels("nature_cnn", layout, body, 512, orthogonal)


NATURE_MIN_SIZE = 36
"""The smallest height and width the Nature CNN's three convolutions leave one pixel of."""


class _Residual(nn.Module):
    def __init__(self, channels: int, orthogonal: bool):
        super().__init__()
        self.conv0 = _conv(channels, channels, 3, 1, orthogonal, padding=1)
        self.conv1 = _conv(channels, channels, 3, 1, orthogonal, padding=1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + self.conv1(F.relu(self.conv0(F.relu(x))))


def impala_cnn(layout: ImageLayout, orthogonal: bool) -> _Pixels:
    """The residual network of Espeholt et al. (2018, IMPALA): three stacks of 16, 32 and 32 channels,
    each a 3x3 convolution, a 3x3/2 max-pool and two residual blocks; ReLU, 256 units."""
    layers: list[nn.Module] = []
    channels = layout.channels
    for width in (16, 32, 32):
        layers += [
            _conv(channels, width, 3, 1, orthogonal, padding=1),
            nn.MaxPool2d(3, 2, padding=1),
            _Residual(width, orthogonal),
            _Residual(width, orthogonal),
        ]
        channels = width
    layers += [nn.ReLU(), nn.Flatten()]
    return _Pixels("impala_cnn", layout, nn.Sequential(*layers), 256, orthogonal)


CNNS = {"nature_cnn": nature_cnn, "impala_cnn": impala_cnn}
"""The image encoders by their ``[network] encoder`` name."""


class DictEncoder(nn.Module):
    """One encoder per key of a Dict observation (a TensorDict [B]), their features concatenated in key order."""

    def __init__(self, encoders: dict[str, Encoder]):
        super().__init__()
        self.names = list(encoders)
        self.encoders = nn.ModuleDict(encoders)
        self.out_features: int = sum(encoder.out_features for encoder in encoders.values())

    def forward(self, obs) -> torch.Tensor:
        return torch.cat([self.encoders[name](obs.get(name)) for name in self.names], -1)


class KeyEncoder(nn.Module):
    """An encoder of one key of a TensorDict observation: a team agent's policy reads its ``observation``
    and a centralized critic its ``critic`` input, each through an encoder of its own."""

    def __init__(self, key: str, encoder: Encoder):
        super().__init__()
        self.key, self.encoder = key, encoder
        self.out_features: int = encoder.out_features

    def forward(self, obs) -> torch.Tensor:
        return self.encoder(obs.get(self.key))


Encoder: TypeAlias = "Flat | OneHot | _Pixels | DictEncoder | KeyEncoder"
"""Every encoder :func:`build_encoder` makes: an ``nn.Module`` with ``out_features``, its output width."""


def _keyed(sub: spaces.Space, name: str) -> str:
    """The encoder ``name`` (the Dict's) means for one of its keys: an explicit CNN for the image keys,
    ``flat`` for every key, otherwise each key's automatic one."""
    if name == "flat" or (name in CNNS and is_image(sub)):
        return name
    return "auto"


def encoder_choice(space: spaces.Space, name: str) -> str:
    """The encoder ``name`` means for ``space``: ``auto`` resolved (``flat`` for a 1-D Box, ``nature_cnn``
    for an image, ``impala_cnn`` for one smaller than 36x36, ``one_hot`` for Discrete, ``dict`` for
    Dict), any other name as given."""
    if isinstance(space, spaces.Dict):
        return "dict"
    if isinstance(space, spaces.Discrete):
        return "one_hot"
    if name != "auto":
        return name
    if not is_image(space):
        return "flat"
    layout = ImageLayout(shape_of(space))
    # Images too small for the Nature CNN's receptive field go through the IMPALA network, which has none.
    return "nature_cnn" if min(layout.height, layout.width) >= NATURE_MIN_SIZE else "impala_cnn"


def build_encoder(space: spaces.Space, network: NetworkConfig) -> Encoder:
    """The encoder of ``space`` as ``network.encoder`` asks (see :func:`encoder_choice`); inside a
    Dict, ``auto`` picks per key and an explicit CNN name applies to its image keys.

    The space must have passed :func:`space_problem`.
    """
    orthogonal = network.init == "orthogonal"
    choice = encoder_choice(space, network.encoder)
    # The space's type, not the choice, picks the Dict and Discrete encoders (the type checker narrows on it):
    # encoder_choice returns "dict" and "one_hot" for exactly these spaces, and no [network] name means them.
    if isinstance(space, spaces.Dict):
        keyed = {
            name: network.model_copy(update={"encoder": _keyed(sub, network.encoder)})
            for name, sub in space.spaces.items()
        }
        return DictEncoder({name: build_encoder(sub, keyed[name]) for name, sub in space.spaces.items()})
    if isinstance(space, spaces.Discrete):
        return OneHot(space)
    if choice in CNNS:
        return CNNS[choice](ImageLayout(shape_of(space)), orthogonal)
    return Flat(shape_of(space))


def describe(encoder: Encoder) -> str:
    """One line naming an encoder and its output size, for ``validate --build``."""
    if isinstance(encoder, DictEncoder):
        # ModuleDict indexes as nn.Module; DictEncoder was built from encoders only.
        parts = ", ".join(f"{name}: {describe(cast(Encoder, encoder.encoders[name]))}" for name in encoder.names)
        return f"dict({parts}) -> {encoder.out_features}"
    if isinstance(encoder, KeyEncoder):
        return f"{encoder.key}: {describe(encoder.encoder)}"
    kind = encoder.kind if isinstance(encoder, _Pixels) else "flat" if isinstance(encoder, Flat) else "one_hot"
    return f"{kind} -> {encoder.out_features}"


def space_problem(space: spaces.Space, encoder: str) -> str | None:
    """Why ``encoder`` (a ``[network] encoder`` name) cannot read observations of ``space``; None when it can."""
    if isinstance(space, spaces.Dict):
        for name, sub in space.spaces.items():
            if isinstance(sub, spaces.Dict):
                return f"key {name!r} is itself a Dict; nested Dict observations are not supported"
            problem = space_problem(sub, _keyed(sub, encoder))
            if problem:
                return f"key {name!r}: {problem}"
        return None
    if isinstance(space, spaces.Discrete):
        return None
    if not isinstance(space, spaces.Box):
        return f"{type(space).__name__} observations are not supported; supported: Box, Discrete, Dict of them"
    shape = tuple(space.shape)
    if encoder in CNNS:
        if not is_image(space):
            return (
                f"encoder {encoder!r} reads images (a uint8 Box in [0, 255] of 2 to 4 dimensions), not "
                f'Box{shape} of {space.dtype}; use "flat" or "auto"'
            )
        layout = ImageLayout(shape)
        if encoder == "nature_cnn" and min(layout.height, layout.width) < NATURE_MIN_SIZE:
            return (
                f"images of {layout.height}x{layout.width} are smaller than the Nature CNN's receptive field: "
                f'it needs at least {NATURE_MIN_SIZE}x{NATURE_MIN_SIZE}; use "impala_cnn" or "flat"'
            )
        return None
    if encoder == "auto" and len(shape) != 1 and not is_image(space):
        return (
            f"Box{shape} of {space.dtype} is neither a vector nor an image (a uint8 Box in [0, 255]); "
            'set [network] encoder = "flat" to flatten it into a vector'
        )
    return None


def named_encoders(agent: nn.Module) -> list[tuple[str, Encoder]]:
    """The encoders of ``agent`` by module path, outermost only and without target-network copies."""
    found: list[tuple[str, Encoder]] = []
    for name, module in agent.named_modules():
        if "target" in name or any(name.startswith(outer + ".") for outer, _ in found):
            continue
        if isinstance(module, (Flat, OneHot, _Pixels, DictEncoder, KeyEncoder)):
            found.append((name, module))
    return found
