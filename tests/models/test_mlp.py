"""The mlp() builder: layer sizes, the activation between layers and none after the last, the
forward pass against a plain loop, and the orthogonal initialisation's gains."""

import math

import pytest
import torch
from torch import nn

from rlcli.models.mlp import ACTIVATIONS, mlp

# The functions the ACTIVATIONS names stand for, written out for the plain loop.
FUNCTIONS = {
    "tanh": torch.tanh,
    "relu": torch.relu,
    "elu": nn.functional.elu,
    "gelu": nn.functional.gelu,
    "silu": nn.functional.silu,
    "leaky_relu": nn.functional.leaky_relu,
}


def linears(net: nn.Sequential) -> list[nn.Linear]:
    return [layer for layer in net if isinstance(layer, nn.Linear)]


def test_every_activation_name_has_a_function_here():
    assert set(FUNCTIONS) == set(ACTIVATIONS)


@pytest.mark.parametrize(
    ("hidden", "shapes"),
    [
        ((64, 32), [(64, 5), (32, 64), (3, 32)]),
        ((7,), [(7, 5), (3, 7)]),
        ((), [(3, 5)]),
    ],
    ids=["two-hidden", "one-hidden", "linear"],
)
def test_layer_sizes_run_from_the_input_through_the_hidden_widths_to_the_output(hidden, shapes):
    net = mlp(5, hidden, 3, activation="tanh", orthogonal=False, out_gain=1.0)
    assert [tuple(layer.weight.shape) for layer in linears(net)] == shapes
    assert all(layer.bias is not None for layer in linears(net))
    assert net(torch.zeros(11, 5)).shape == (11, 3)


@pytest.mark.parametrize("activation", sorted(ACTIVATIONS))
def test_an_activation_follows_each_hidden_layer_and_none_the_output(activation):
    net = mlp(4, (8, 8), 2, activation=activation, orthogonal=True, out_gain=1.0)
    kinds = [type(layer) for layer in net]
    act = ACTIVATIONS[activation]
    assert kinds == [nn.Linear, act, nn.Linear, act, nn.Linear]
    # Separate instances: no module is shared between positions.
    assert net[1] is not net[3]


@pytest.mark.parametrize("activation", sorted(ACTIVATIONS))
def test_forward_matches_a_plain_loop(activation):
    torch.manual_seed(0)
    net = mlp(6, (16, 9), 4, activation=activation, orthogonal=False, out_gain=1.0)
    x = torch.randn(32, 6)
    h = x
    layers = linears(net)
    for layer in layers[:-1]:
        h = FUNCTIONS[activation](h @ layer.weight.T + layer.bias)
    expected = h @ layers[-1].weight.T + layers[-1].bias
    torch.testing.assert_close(net(x), expected)
    # No activation after the output: a ReLU network still gives negative outputs.
    if activation == "relu":
        assert (net(torch.randn(256, 6) * 5) < 0).any()


def assert_orthogonal(weight: torch.Tensor, gain: float) -> None:
    """Rows (or columns, whichever are fewer) orthogonal with norm ``gain``."""
    w = weight.detach().double()
    gram = w @ w.T if w.shape[0] <= w.shape[1] else w.T @ w
    torch.testing.assert_close(gram, gain**2 * torch.eye(gram.shape[0], dtype=torch.float64), atol=1e-5, rtol=0)


@pytest.mark.parametrize("out_gain", [0.01, 1.0])
def test_orthogonal_init_gives_hidden_layers_gain_sqrt2_the_output_its_gain_and_zero_biases(out_gain):
    torch.manual_seed(0)
    # Wider and narrower layers alike: 4 -> 64 -> 16 -> 3.
    net = mlp(4, (64, 16), 3, activation="tanh", orthogonal=True, out_gain=out_gain)
    *hidden, output = linears(net)
    for layer in hidden:
        assert_orthogonal(layer.weight, math.sqrt(2))
    assert_orthogonal(output.weight, out_gain)
    for layer in linears(net):
        assert torch.count_nonzero(layer.bias) == 0


def test_a_zero_output_gain_gives_a_network_that_outputs_zeros():
    net = mlp(4, (8,), 2, activation="relu", orthogonal=True, out_gain=0.0)
    assert torch.count_nonzero(net(torch.randn(16, 4))) == 0


def test_without_orthogonal_init_layers_keep_torchs_default():
    torch.manual_seed(0)
    net = mlp(4, (64,), 3, activation="tanh", orthogonal=False, out_gain=0.01)
    torch.manual_seed(0)
    default = [nn.Linear(4, 64), nn.Linear(64, 3)]
    for layer, plain in zip(linears(net), default):
        assert torch.equal(layer.weight, plain.weight) and torch.equal(layer.bias, plain.bias)


@pytest.mark.parametrize("grad", [True, False], ids=["training", "no-grad"])
def test_the_cpu_tanh_matches_torch_tanh_in_value_and_gradient(grad):
    from rlcli.models.mlp import Tanh

    x = (torch.randn(300, 64, generator=torch.Generator().manual_seed(0)) * 4).requires_grad_(
        grad
    )  # above 8192: the sigmoid form
    # Saturated inputs too: sigmoid's underflow must give -1 and 1 exactly, never NaN.
    x = torch.cat([x, torch.tensor([[-100.0, 100.0, 0.0, -1e-8] * 16], requires_grad=grad)])
    with torch.set_grad_enabled(grad):
        ours, reference = Tanh()(x), torch.tanh(x)
    torch.testing.assert_close(ours, reference, atol=3e-7, rtol=0)
    assert ours[-1, 0] == -1 and ours[-1, 1] == 1
    if grad:
        weights = torch.randn(x.shape, generator=torch.Generator().manual_seed(1))
        (ours_grad,) = torch.autograd.grad((ours * weights).sum(), x)
        (reference_grad,) = torch.autograd.grad((torch.tanh(x) * weights).sum(), x)
        torch.testing.assert_close(ours_grad, reference_grad, atol=2e-6, rtol=0)
