"""Observation encoders: output sizes, where frames become floats, image layouts, the automatic
choice per space, and the messages of spaces an encoder cannot read."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from gymnasium import spaces
from tensordict import TensorDict

from rlcli.config.schema import NetworkConfig
from rlcli.models.encoders import (
    DictEncoder,
    Flat,
    OneHot,
    build_encoder,
    describe,
    encoder_choice,
    space_problem,
)


def image(*shape: int) -> spaces.Box:
    return spaces.Box(0, 255, shape, np.uint8)


def network(encoder: str = "auto") -> NetworkConfig:
    return NetworkConfig(encoder=encoder)


@pytest.mark.parametrize(
    ("space", "encoder", "size"),
    [
        (spaces.Box(-1, 1, (5,), np.float32), "auto", 5),
        # 36x36, the smallest image the Nature CNN reads (auto picks it), keeps the convolutions cheap.
        (image(4, 36, 36), "auto", 512),
        (image(4, 36, 36), "impala_cnn", 256),
        (image(3, 16, 16), "auto", 256),
        (spaces.Discrete(7), "auto", 7),
        (spaces.Box(-1, 1, (2, 3), np.float32), "flat", 6),
    ],
)
def test_output_sizes(space, encoder, size):
    module = build_encoder(space, network(encoder))
    out = module(torch.as_tensor(np.stack([space.sample(), space.sample()])))
    assert module.out_features == size and out.shape == (2, size) and out.dtype == torch.float32


def test_uint8_frames_are_scaled_by_1_over_255_inside_the_encoder():
    torch.manual_seed(0)
    cnn = build_encoder(image(4, 40, 40), network("nature_cnn"))
    frames = torch.randint(0, 256, (2, 4, 40, 40), dtype=torch.uint8)
    torch.testing.assert_close(cnn(frames), cnn(frames.float() / 255.0))
    # Float input (normalized frames) is read as it is, not scaled again.
    assert not torch.allclose(cnn(frames), cnn(frames.float()))


@pytest.mark.parametrize("layout", ["last", "stacked"])
def test_channels_last_and_stacked_colour_frames_are_read_as_channel_planes(layout):
    torch.manual_seed(0)
    first = build_encoder(image(6, 36, 36), network("nature_cnn"))
    frames = torch.randint(0, 256, (2, 6, 36, 36), dtype=torch.uint8)
    if layout == "last":
        other = build_encoder(image(36, 36, 6), network("nature_cnn"))
        moved = frames.permute(0, 2, 3, 1)
    else:
        other = build_encoder(image(2, 36, 36, 3), network("nature_cnn"))
        # Frame s, colour c is plane 3 s + c.
        moved = frames.view(2, 2, 3, 36, 36).permute(0, 1, 3, 4, 2)
    other.load_state_dict(first.state_dict())
    torch.testing.assert_close(other(moved), first(frames))


def test_leading_dims_of_a_rollout_pass_through():
    cnn = build_encoder(image(4, 36, 36), network("impala_cnn"))
    frames = torch.randint(0, 256, (3, 2, 4, 36, 36), dtype=torch.uint8)
    torch.testing.assert_close(cnn(frames), cnn(frames.flatten(0, 1)).view(3, 2, 256))


def test_dict_concatenates_one_encoder_per_key_in_key_order():
    space = spaces.Dict(
        {"pixels": image(3, 16, 16), "goal": spaces.Box(-1, 1, (2,), np.float32), "room": spaces.Discrete(4)}
    )
    encoder = build_encoder(space, network())
    assert isinstance(encoder, DictEncoder) and encoder.out_features == 256 + 2 + 4
    batch = TensorDict(
        {
            "pixels": torch.zeros(2, 3, 16, 16, dtype=torch.uint8),
            "goal": torch.ones(2, 2),
            "room": torch.tensor([1, 3]),
        },
        batch_size=[2],
    )
    out = encoder(batch)
    # gymnasium's Dict sorts its keys: goal, pixels, room.
    assert encoder.names == ["goal", "pixels", "room"]
    torch.testing.assert_close(out[:, :2], torch.ones(2, 2))
    torch.testing.assert_close(out[:, -4:], torch.eye(4)[[1, 3]])
    assert describe(encoder) == "dict(goal: flat -> 2, pixels: impala_cnn -> 256, room: one_hot -> 4) -> 262"


@pytest.mark.parametrize(
    ("space", "choice"),
    [
        (spaces.Box(-1, 1, (3,), np.float32), "flat"),
        (image(4, 84, 84), "nature_cnn"),
        (image(84, 84, 3), "nature_cnn"),
        (image(3, 20, 20), "impala_cnn"),
        (spaces.Discrete(3), "one_hot"),
        (spaces.Dict({"a": spaces.Discrete(3)}), "dict"),
    ],
)
def test_auto_choices(space, choice):
    assert encoder_choice(space, "auto") == choice


@pytest.mark.parametrize(
    ("space", "encoder", "fragments"),
    [
        (spaces.Box(-1, 1, (4,), np.float32), "nature_cnn", ("reads images", "Box(4,)", '"flat"')),
        (image(4, 20, 20), "nature_cnn", ("20x20", "at least 36x36", "impala_cnn")),
        (spaces.Box(-1, 1, (8, 8), np.float32), "auto", ("neither a vector nor an image", 'encoder = "flat"')),
        (spaces.Dict({"outer": spaces.Dict({"inner": spaces.Discrete(2)})}), "auto", ("nested Dict",)),
        (spaces.MultiDiscrete([2, 3]), "auto", ("MultiDiscrete observations are not supported",)),
    ],
)
def test_spaces_an_encoder_cannot_read_say_why_and_what_to_use(space, encoder, fragments):
    problem = space_problem(space, encoder)
    assert problem is not None
    for fragment in fragments:
        assert fragment in problem


def test_readable_spaces_have_no_problem():
    for space, encoder in [
        (image(4, 84, 84), "nature_cnn"),
        (spaces.Box(-1, 1, (8, 8), np.float32), "flat"),
        (spaces.Discrete(3), "nature_cnn"),
        (spaces.Box(-1, 1, (3,), np.float32), "auto"),
    ]:
        assert space_problem(space, encoder) is None


def test_vectors_and_indices_need_no_weights():
    assert not list(Flat((3,)).parameters()) and not list(OneHot(spaces.Discrete(3)).parameters())


def test_flat_inside_a_dict_flattens_every_key_and_a_scalar_box_is_one_feature():
    space = spaces.Dict({"grid": spaces.Box(-1, 1, (8, 8), np.float32), "speed": spaces.Box(-1, 1, (), np.float32)})
    assert space_problem(space, "auto") is not None
    assert space_problem(space, "flat") is None
    encoder = build_encoder(space, network("flat"))
    batch = TensorDict({"grid": torch.ones(3, 8, 8), "speed": torch.full((3,), 2.0)}, batch_size=[3])
    out = encoder(batch)
    assert encoder.out_features == 65 and out.shape == (3, 65)
    torch.testing.assert_close(out[:, -1], torch.full((3,), 2.0))
