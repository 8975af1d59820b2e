"""Every shipped preset's agent, exported to ONNX and to pt2, acts as its eager policy on 1,000 raw
observations recorded from its env (integration: two exports a preset, minutes in all).

The agents are built as ``rlcli eval`` builds them, untrained, with their observation normalization
fitted to the recorded observations (so that it is not the identity); a masked preset's file is fed
random masks, a memory preset's its own state over two steps."""

from __future__ import annotations

import pytest
import torch

from rlcli.carry import Carry
from rlcli.config.load import load_config
from rlcli.config.presets import available_presets
from rlcli.envs.masks import mask_size
from rlcli.export import deployed_untrained, write_file
from rlcli.policy_file import opened
from test_export import env_observations

ROWS = 1000


def built(preset: str):
    """(The preset's DeployedPolicy, its observations as the file's inputs (a list), the obs space.)"""
    cfg = load_config(preset)
    masked = cfg.env.action_mask in ("info", "observation")
    module, obs_space, act_space = deployed_untrained(cfg, source=preset, masked=masked)
    agent = module.agent
    raw = env_observations(cfg.env, ROWS)
    if module.keys is None:
        observation = torch.as_tensor(raw)
        inputs = [observation]
    else:
        from tensordict import TensorDict

        inputs = [torch.as_tensor(raw[key]) for key in module.keys]
        observation = TensorDict(dict(zip(module.keys, inputs)), batch_size=[ROWS])
    agent.obs_norm.observe(observation[None])
    return module, inputs, act_space


@pytest.mark.integration
@pytest.mark.parametrize("preset", sorted(available_presets()))
def test_every_presets_exported_policy_acts_as_its_eager_policy(preset, tmp_path):
    pytest.importorskip("onnxruntime")
    module, inputs, act_space = built(preset)
    if module.masked:
        generator = torch.Generator().manual_seed(0)
        mask = torch.rand(ROWS, mask_size(act_space), generator=generator) < 0.5
        mask[:, 0] = True
        inputs.append(mask)
    if module.remembers:
        carry = Carry.of(module.agent, ROWS, torch.device("cpu"))
        inputs += [carry.memory, carry.first]
    examples = tuple(value[:2] for value in inputs)
    for fmt in ("pt2", "onnx"):
        out = tmp_path / f"policy.{fmt}"
        write_file(module, examples, out, {"inputs": module.input_names}, format=fmt, dynamic=True)
        _, call = opened(out)
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
