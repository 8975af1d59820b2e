import numpy as np
import torch
from gymnasium.vector import AutoresetMode

from rlcli import keys
from rlcli.config.load import validate_data
from rlcli.envs import make_envs
from rlcli.run import build_run
from rlcli.timing import Timer


def short_episode_config(vectorization: str, env_id: str = "CartPole-v1"):
    return validate_data({
        "run": {"seed": 5, "device": "cpu"},
        "env": {"id": env_id, "num_envs": 4, "vectorization": vectorization, "max_episode_steps": 5},
        "algo": {"name": "ppo", "minibatch_size": 32},
        "collector": {"frames_per_batch": 64, "total_frames": 640},
    })


def test_next_step_autoreset_masks_reset_steps_and_bootstraps_from_final_obs():
    run = build_run(short_episode_config("vector_entry_point"))
    try:
        assert run.collector.mode is AutoresetMode.NEXT_STEP
        batch = run.collector.collect(Timer(run.device))
        assert batch.batch_size == torch.Size([16, 4])
        done = batch[keys.TERMINATED] | batch[keys.TRUNCATED]
        # The step after each episode end only resets the env: it is not a transition.
        assert batch[keys.VALID][0].all()
        assert torch.equal(batch[keys.VALID][1:], ~done[:-1])
        assert batch[keys.TRUNCATED].any()
        for t, n in batch[keys.TRUNCATED][:-1].nonzero().tolist():
            # The observation after a truncated step is the final one: its value is the bootstrap.
            assert batch[keys.NEXT_VALUE][t, n] == batch[keys.VALUE][t + 1, n]
        assert run.collector.frames == 64
    finally:
        run.close()


def test_same_step_autoreset_bootstraps_truncation_from_info_final_obs():
    cfg = short_episode_config("sync", "Pendulum-v1")
    run = build_run(cfg)
    try:
        assert run.collector.mode is AutoresetMode.SAME_STEP
        batch = run.collector.collect(Timer(run.device)).clone()
    finally:
        run.close()
    assert batch[keys.VALID].all()
    truncated = batch[keys.TRUNCATED]
    assert truncated.sum() >= 4
    # Replay the same actions in a fresh copy of the envs to see the final observations.
    replay = make_envs(cfg.env)
    replay.reset(seed=cfg.run.seed)
    agent = run.algo.agent
    for t in range(batch.batch_size[0]):
        action = np.clip(batch[keys.ACTION][t].numpy(), -2.0, 2.0)
        obs, _, _, trunc, info = replay.step(action)
        if trunc.any():
            final = torch.as_tensor(np.stack(info["final_obs"][trunc]), dtype=torch.float32)
            with torch.no_grad():
                expected = agent.value(final)
            torch.testing.assert_close(batch[keys.NEXT_VALUE][t][torch.from_numpy(trunc)], expected)
            if t + 1 < batch.batch_size[0]:
                # The next row holds the reset observation, not the final one.
                assert not torch.allclose(batch[keys.VALUE][t + 1][torch.from_numpy(trunc)], expected)
    replay.close()


def test_batch_is_reused_and_filled_in_place():
    run = build_run(short_episode_config("vector_entry_point"))
    try:
        timer = Timer(run.device)
        first = run.collector.collect(timer)
        pointer = first[keys.OBSERVATION].data_ptr()
        second = run.collector.collect(timer)
        assert second[keys.OBSERVATION].data_ptr() == pointer
        assert run.collector.frames == 128
        assert timer.current["collect.env_step"] > 0 and timer.current["collect.policy"] > 0
    finally:
        run.close()
