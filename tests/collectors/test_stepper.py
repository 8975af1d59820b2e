from types import SimpleNamespace

import numpy as np
import pytest
import torch
from gymnasium.vector import AutoresetMode

from rlcli import keys
from rlcli.config.load import validate_data
from rlcli.envs import make_envs
from rlcli.run import build_run
from rlcli.timing import Timer


def short_episode_config(vectorization: str, env_id: str = "CartPole-v1", algo: str = "ppo", **env):
    extra = {"minibatch_size": 32} if algo == "ppo" else {"learning_starts": 0}
    return validate_data(
        {
            "run": {"seed": 5, "device": "cpu"},
            "env": {"id": env_id, "num_envs": 4, "vectorization": vectorization, "max_episode_steps": 5, **env},
            "algo": {"name": algo, **extra},
            "collector": {"frames_per_batch": 64, "total_frames": 640},
        }
    )


def replay(cfg, actions: torch.Tensor):
    """Step a fresh copy of the envs with ``actions`` ([T, N]); yields what each step returned."""
    envs = make_envs(cfg.env)
    try:
        obs, _ = envs.reset(seed=cfg.run.seed)
        for t in range(actions.shape[0]):
            action = actions[t].numpy()
            if action.dtype != np.int64:
                action = np.clip(action, -2.0, 2.0)
            before = obs
            obs, reward, terminated, truncated, info = envs.step(action)
            yield before, obs, reward, terminated, truncated, info
    finally:
        envs.close()


def test_next_step_autoreset_masks_reset_steps_and_keeps_final_observations():
    run = build_run(short_episode_config("vector_entry_point"))
    try:
        assert run.source.mode is AutoresetMode.NEXT_STEP
        batch = run.source.next_batch(Timer(run.device))
        assert batch.batch_size == torch.Size([16, 4])
        done = batch[keys.TERMINATED] | batch[keys.TRUNCATED]
        # The step after each episode end only resets the env: it is not a transition.
        assert batch[keys.VALID][0].all()
        assert torch.equal(batch[keys.VALID][1:], ~done[:-1])
        assert batch[keys.TRUNCATED].any()
        obs, next_obs = batch[keys.OBSERVATION], batch[keys.NEXT_OBSERVATION]
        # Every next observation is the observation the env showed next; at an episode end
        # that is the final one, which the reset step shows again.
        assert torch.equal(next_obs[:-1], obs[1:])
        assert run.source.progress == 64
    finally:
        run.close()


def test_same_step_autoreset_stores_the_true_final_observation():
    cfg = short_episode_config("sync", "Pendulum-v1")
    run = build_run(cfg)
    try:
        assert run.source.mode is AutoresetMode.SAME_STEP
        batch = run.source.next_batch(Timer(run.device)).clone()
    finally:
        run.close()
    assert batch[keys.VALID].all()
    truncated = batch[keys.TRUNCATED]
    assert truncated.sum() >= 4
    for t, (before, after, reward, _, trunc, info) in enumerate(replay(cfg, batch[keys.ACTION])):
        torch.testing.assert_close(batch[keys.OBSERVATION][t], torch.as_tensor(before, dtype=torch.float32))
        torch.testing.assert_close(batch[keys.REWARD][t], torch.as_tensor(reward, dtype=torch.float32))
        expected = torch.as_tensor(after, dtype=torch.float32).clone()
        if trunc.any():
            final = np.stack(info["final_obs"][trunc])
            expected[torch.from_numpy(trunc)] = torch.as_tensor(final, dtype=torch.float32)
            if t + 1 < batch.batch_size[0]:
                # The next row starts a new episode: its observation is not the final one.
                mask = torch.from_numpy(trunc)
                assert not torch.allclose(batch[keys.OBSERVATION][t + 1][mask], expected[mask])
        torch.testing.assert_close(batch[keys.NEXT_OBSERVATION][t], expected)


def test_observations_and_rewards_are_stored_raw_and_statistics_do_not_move():
    cfg = short_episode_config("sync", "Pendulum-v1", normalize_observation=True, normalize_reward=True)
    run = build_run(cfg)
    try:
        stats = {k: v.clone() for k, v in run.algo.agent.obs_norm.state_dict().items()}
        batch = run.source.next_batch(Timer(run.device)).clone()
        after = run.algo.agent.obs_norm.state_dict()
    finally:
        run.close()
    assert all(torch.equal(stats[k], after[k]) for k in stats)
    # Pendulum's angular velocity reaches several units: raw, not clipped or scaled.
    for t, (before, _, reward, *_) in enumerate(replay(cfg, batch[keys.ACTION])):
        torch.testing.assert_close(batch[keys.OBSERVATION][t], torch.as_tensor(before, dtype=torch.float32))
        torch.testing.assert_close(batch[keys.REWARD][t], torch.as_tensor(reward, dtype=torch.float32))


def test_box_actions_are_clipped_for_the_env_and_stored_as_sampled():
    cfg = short_episode_config("sync", "Pendulum-v1")
    run = build_run(cfg)
    try:
        # A wide policy samples far outside Pendulum's [-2, 2].
        run.algo.agent.policy.log_std.data.fill_(2.0)
        batch = run.source.next_batch(Timer(run.device)).clone()
    finally:
        run.close()
    assert batch[keys.ACTION].abs().max() > 2.0
    # Replaying the clipped actions reproduces every reward.
    for t, (_, _, reward, *_) in enumerate(replay(cfg, batch[keys.ACTION])):
        torch.testing.assert_close(batch[keys.REWARD][t], torch.as_tensor(reward, dtype=torch.float32))


def test_actor_keys_are_stored_beside_the_env_keys():
    run = build_run(short_episode_config("vector_entry_point"))
    try:
        batch = run.source.next_batch(Timer(run.device))
        assert {keys.LOG_PROB, keys.VALUE} <= set(batch.keys())
    finally:
        run.close()
    dqn = build_run(short_episode_config("vector_entry_point", algo="dqn"))
    try:
        batch = dqn.source.next_batch(Timer(dqn.device))
        assert keys.LOG_PROB not in batch.keys()
        assert batch[keys.ACTION].dtype == torch.int64
    finally:
        dqn.close()


def test_batch_is_reused_and_filled_in_place():
    run = build_run(short_episode_config("vector_entry_point"))
    try:
        timer = Timer(run.device)
        first = run.source.next_batch(timer)
        pointers = {key: first[key].data_ptr() for key in first.keys()}
        second = run.source.next_batch(timer)
        assert {key: second[key].data_ptr() for key in second.keys()} == pointers
        assert run.source.progress == 128
        assert timer.current["collect.env_step"] > 0 and timer.current["collect.policy"] > 0
    finally:
        run.close()


# Action masks: read from info into the carry and the batch, checked at every step.


def taxi_config(**env):
    return validate_data(
        {
            "run": {"seed": 3, "device": "cpu"},
            "env": {"id": "Taxi-v4", "num_envs": 4, "max_episode_steps": 5, "action_mask": "info", **env},
            "algo": {"name": "ppo", "minibatch_size": 32},
            "collector": {"frames_per_batch": 64, "total_frames": 640},
        }
    )


def test_masks_of_same_step_envs_are_stored_for_observations_and_final_observations():
    cfg = taxi_config()
    run = build_run(cfg)
    try:
        assert run.source.mode is AutoresetMode.SAME_STEP and run.source.action_mask == "info"
        batch = run.source.next_batch(Timer(run.device))
        mask, next_mask, action = batch[keys.ACTION_MASK], batch[keys.NEXT_ACTION_MASK], batch[keys.ACTION]
        assert mask.shape == next_mask.shape == (16, 4, 6) and mask.dtype == torch.bool
        # Every action was one its mask allowed.
        assert mask.gather(-1, action.unsqueeze(-1)).all()
        done = batch[keys.TERMINATED] | batch[keys.TRUNCATED]
        assert done.any()
        _, first_info = make_envs(cfg.env).reset(seed=cfg.run.seed)
        assert torch.equal(mask[0], torch.from_numpy(first_info["action_mask"].astype(bool)))
        for t, (_, _, _, term, trunc, info) in enumerate(replay(cfg, action)):
            ended = term | trunc
            now = info["action_mask"].astype(bool)
            final = info["final_info"]["action_mask"].astype(bool) if ended.any() else now
            expected = np.where(ended[:, None], final, now)
            assert np.array_equal(next_mask[t].numpy(), expected)
            if t + 1 < 16:
                assert np.array_equal(mask[t + 1].numpy(), now)
        assert torch.equal(run.source.carry.mask, torch.from_numpy(now))
    finally:
        run.close()


def test_masks_of_next_step_envs_follow_the_reset_step():
    import gymnasium as gym

    from rlcli.collectors.stepper import Collector

    run = build_run(taxi_config())
    envs = gym.make_vec(
        "Taxi-v4",
        num_envs=3,
        vectorization_mode="sync",
        vector_kwargs={"autoreset_mode": AutoresetMode.NEXT_STEP},
        max_episode_steps=4,
    )
    try:
        collector = Collector(envs, run.algo, steps=20, device=run.device, seed=0, action_mask="info")
        batch = collector.next_batch(Timer(run.device))
        mask, next_mask = batch[keys.ACTION_MASK], batch[keys.NEXT_ACTION_MASK]
        # In NEXT_STEP mode the next observation is always the one acted on next (the reset step acts
        # on the final one), and so is its mask.
        assert torch.equal(next_mask[:-1], mask[1:])
        assert (~batch[keys.VALID]).any()
        assert mask.gather(-1, batch[keys.ACTION].unsqueeze(-1)).all()
    finally:
        envs.close()
        run.close()


def test_an_unmasked_run_stores_no_masks():
    run = build_run(short_episode_config("sync"))
    try:
        batch = run.source.next_batch(Timer(run.device))
        assert keys.ACTION_MASK not in batch.keys() and keys.NEXT_ACTION_MASK not in batch.keys()
        assert run.source.carry.mask is None and run.source.action_mask is None
    finally:
        run.close()


@pytest.mark.parametrize(
    ("ranks", "said"),
    [
        (None, "iteration 1: the action mask of env 1 (Taxi-v4) at its step 3 is all False"),
        # Rank 1 of 2: its own env 1, at that env's own step (frames count both ranks' steps).
        (
            SimpleNamespace(world_size=2, rank=1),
            "rank 1, iteration 1: the action mask of env 1 (Taxi-v4) at its step 3 is all False",
        ),
    ],
)
def test_a_mask_that_allows_nothing_stops_training_naming_the_rank_the_env_and_the_step(ranks, said):
    import gymnasium as gym

    from rlcli.collectors.stepper import Collector
    from rlcli.training_error import TrainingError

    class NothingAtStep3(gym.Wrapper):
        def reset(self, **kwargs):
            self.t = 0
            return self.env.reset(**kwargs)

        def step(self, action):
            obs, reward, terminated, truncated, info = self.env.step(action)
            self.t += 1
            if self.t == 3:
                info = {**info, "action_mask": np.zeros(6, dtype=np.int8)}
            return obs, reward, terminated, truncated, info

    run = build_run(taxi_config())
    envs = gym.vector.SyncVectorEnv(
        [lambda: gym.make("Taxi-v4"), lambda: NothingAtStep3(gym.make("Taxi-v4"))],
        autoreset_mode=AutoresetMode.SAME_STEP,
    )
    try:
        collector = Collector(
            envs, run.algo, steps=8, device=run.device, seed=0, group=ranks, env_id="Taxi-v4", action_mask="info"
        )
        with pytest.raises(TrainingError) as caught:
            collector.next_batch(Timer(run.device))
        assert str(caught.value).startswith(said), str(caught.value)
        # A rank that met it alone is named, so that it leaves its group without waiting for the others.
        assert caught.value.rank == (None if ranks is None else ranks.rank)
    finally:
        envs.close()
        run.close()
