"""Every shipped preset's agent, exported to ONNX and to pt2, acts as its eager policy on 1,000 raw
observations recorded from its env; and, exported with ``stochastic``, one preset per algorithm (with the
masked, memory and Discrete-observation presets, and MultiDiscrete and MultiBinary actions on the test envs)
draws its actions from the eager policy's distribution (integration: minutes in all).

The agents are built as ``rlcli eval`` builds them, untrained, with their observation normalization
fitted to the recorded observations (so that it is not the identity); a masked preset's file is fed
random masks, a memory preset's its own state over two steps."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
import torch
from gymnasium import spaces

from rlcli.carry import Carry
from rlcli.config.algos import TEAMS
from rlcli.config.errors import InputError
from rlcli.config.load import load_config
from rlcli.config.presets import available_presets
from rlcli.envs.masks import mask_size
from rlcli.envs.random_play import random_observations
from rlcli.play.export import deployed_untrained, write_file
from rlcli.play.policy_file import opened
from support.distributions import SAMPLES, assert_same_distribution
from support.paths import env_packages_importable

# Team presets are refused by export until it writes one file per group (test_export_refuses_team_presets).
SINGLE_AGENT = sorted(p for p in available_presets() if load_config(p).algo.name not in TEAMS)

ROWS = 1000
DRAWN_ROWS = 3
"""Observations a stochastic file is sampled at, SAMPLES draws each."""
SHAKE = 0.2
"""The standard deviation of the noise added to a sampled agent's weights."""


def built(cfg, source: str, rows: int = ROWS, *, stochastic: bool = False):
    """(``cfg``'s DeployedPolicy, ``rows`` recorded observations as the file's inputs (a list, masks and fresh
    memory included), the action space)."""
    masked = cfg.env.action_mask in ("info", "observation")
    module, _, act_space = deployed_untrained(cfg, source=source, masked=masked, stochastic=stochastic)
    raw = random_observations(cfg.env, rows)
    if module.keys is None:
        observation = torch.as_tensor(raw)
        inputs = [observation]
    else:
        from tensordict import TensorDict

        inputs = [torch.as_tensor(raw[key]) for key in module.keys]
        observation = TensorDict(dict(zip(module.keys, inputs)), batch_size=[rows])
    module.agent.obs_norm.observe(observation[None])
    if module.masked:
        inputs.append(random_masks(act_space, rows))
    if module.remembers:
        carry = Carry.of(module.agent, rows, torch.device("cpu"))
        inputs += [carry.memory, carry.first]
    return module, inputs, act_space


def random_masks(act_space, rows: int) -> torch.Tensor:
    """[rows, mask size] bool masks, about half the actions allowed, at least one of each (sub-)action."""
    generator = torch.Generator().manual_seed(0)
    mask = torch.rand(rows, mask_size(act_space), generator=generator) < 0.5
    sizes = act_space.nvec.tolist() if isinstance(act_space, spaces.MultiDiscrete) else [int(act_space.n)]
    mask[:, [0, *itertools.accumulate(sizes[:-1])]] = True
    return mask


def exported(module, inputs, fmt: str, tmp_path):
    """``module`` written as ``fmt`` (dynamic batch, traced on two rows of ``inputs``), as a call."""
    out = tmp_path / f"policy.{fmt}"
    examples = tuple(value[:2] for value in inputs)
    write_file(module, examples, out, {"inputs": module.input_names}, format=fmt, dynamic=True)
    return opened(out)[1]


@pytest.mark.integration
@pytest.mark.parametrize("preset", SINGLE_AGENT)
def test_every_presets_exported_policy_acts_as_its_eager_policy(preset, tmp_path):
    pytest.importorskip("onnxruntime")
    module, inputs, _ = built(load_config(preset), preset)
    for fmt in ("pt2", "onnx"):
        call = exported(module, inputs, fmt, tmp_path)
        feeds = list(inputs)
        for _step in range(2 if module.remembers else 1):
            with torch.no_grad():
                eager = module(*feeds)
            played = call(feeds)
            eager = list(eager) if isinstance(eager, tuple) else [eager]
            if eager[0].dtype.is_floating_point:
                torch.testing.assert_close(played[0], eager[0], atol=1e-5, rtol=0, msg=f"{preset} {fmt}")
            else:
                assert torch.equal(played[0], eager[0]), f"{preset} {fmt}: actions differ"
            if module.remembers:
                torch.testing.assert_close(played[1], eager[1], atol=1e-5, rtol=0)
                feeds = [*feeds[:-2], eager[1], torch.zeros(ROWS, dtype=torch.bool)]


def sampled_presets() -> list[str]:
    """The first preset of each algorithm, the masked, memory and Discrete-observation presets."""
    firsts = {}
    for preset in SINGLE_AGENT:
        firsts.setdefault(load_config(preset).algo.name, preset)
    extras = [
        "dqn_taxi_masked",
        "ppo_taxi_masked",
        "ppo_lstm_cartpolenovel",
        "ppo_lstm_pendulumnovel",
        "ppo_frozenlake",
    ]
    return sorted({*firsts.values(), *extras})


OVERRIDES = {
    "bc_pendulum_expert": ['algo.policy="gaussian"'],
    "dqn_taxi_masked": ["algo.epsilon_end=0.2"],
    "ppo_lstm_pendulumnovel": ["algo.use_sde=false"],
}
"""Settings a preset is sampled with: its own policy has no distribution (a deterministic BC policy, a final
epsilon of 0) or explores with gSDE's held noise matrix, which ``rlcli export --stochastic`` refuses (tested
in test_export.py and algos/test_gsde.py); the memory preset is still sampled, with a plain Gaussian."""

TEST_ENVS = {
    # A Dict observation holding the mask, a MultiDiscrete action masked per sub-action.
    "masked_picks": '[env]\nid = "RlcliTest/MaskedPicks-v0"\naction_mask = "observation"\n',
    # A MultiBinary action.
    "bits": '[env]\nid = "RlcliTest/Bits-v0"\n',
}


@pytest.mark.integration
@pytest.mark.parametrize("case", sampled_presets() + sorted(TEST_ENVS))
def test_a_sampled_export_draws_from_the_eager_policys_distribution(case, tmp_path):
    pytest.importorskip("onnxruntime")
    if case in TEST_ENVS:
        env_packages_importable()
        import rlcli_test_envs  # noqa: F401 - registers the test envs

        config = tmp_path / f"{case}.toml"
        config.write_text(TEST_ENVS[case] + '\n[algo]\nname = "ppo"\n', encoding="utf-8")
        cfg = load_config(config)
    else:
        cfg = load_config(case, OVERRIDES.get(case, []))
    module, inputs, act_space = built(cfg, case, DRAWN_ROWS, stochastic=True)
    assert module.agent.samples
    # An untrained policy is near uniform (its last layer starts small), where a sampler's error hardly
    # shows: its weights are moved at random, far from uniform.
    generator = torch.Generator().manual_seed(0)
    with torch.no_grad():
        for parameter in module.agent.parameters():
            parameter.add_(torch.randn(parameter.shape, generator=generator), alpha=SHAKE)
    repeated = [value.repeat_interleave(SAMPLES, 0) for value in inputs]
    # The eager draws take evaluation's path (a generator given); the file's, the generator-free one.
    module.generator = torch.Generator().manual_seed(0)
    with torch.no_grad():
        eager = module(*repeated)
    module.generator = None
    eager = eager[0] if module.remembers else eager
    for fmt in ("pt2", "onnx"):
        played = exported(module, inputs, fmt, tmp_path)(repeated)[0]
        assert played.shape == eager.shape and played.dtype == eager.dtype, fmt
        assert_same_distribution(played, eager, DRAWN_ROWS)
        if module.masked:
            assert allowed(played, repeated[len(module.keys or [None])], act_space).all(), f"{fmt}: a masked action"


def allowed(actions: torch.Tensor, mask: torch.Tensor, act_space) -> torch.Tensor:
    """Whether each row's action ([N] or [N, k] int64) is one ``mask`` ([N, mask size] bool) allows."""
    if isinstance(act_space, spaces.MultiDiscrete):
        offsets = torch.as_tensor(np.concatenate([[0], np.cumsum(act_space.nvec)[:-1]]))
        return mask.gather(1, actions + offsets).all(1)
    return mask.gather(1, actions[:, None]).squeeze(1)


@pytest.mark.parametrize("preset", sorted(p for p in available_presets() if load_config(p).algo.name in TEAMS))
def test_a_single_file_export_of_a_team_preset_points_to_the_team_export(preset):
    # A team's policies are one file per group (tests/play/test_team_export.py): one file is refused, saying so.
    pytest.importorskip("vmas" if "vmas" in preset else "mpe2")
    with pytest.raises(InputError) as caught:
        built(load_config(preset), preset, rows=2)
    assert "team env" in str(caught.value) and "one file per group" in str(caught.value)
