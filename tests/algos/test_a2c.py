import torch
from tensordict import TensorDict

from rlcli import keys
from rlcli.algos.a2c import a2c_loss
from rlcli.trainer.loop import train


def test_masked_rows_count_for_nothing_in_any_term(tmp_path, cartpole_run):
    run = cartpole_run("a2c", seed=3, frames_per_batch=20, total_frames=200, output_dir=tmp_path)
    run.close()
    agent = run.algo.agent
    g = torch.Generator().manual_seed(0)
    size = 20
    batch = TensorDict(
        {
            keys.INPUT: torch.randn(size, 4, generator=g),
            keys.ACTION: torch.randint(0, 2, (size,), generator=g),
            keys.ADVANTAGE: torch.randn(size, generator=g),
            keys.VALUE_TARGET: torch.randn(size, generator=g),
        },
        batch_size=[size],
    )
    valid = torch.ones(size, dtype=torch.bool)
    valid[[1, 2, 9, 19]] = False
    batch[keys.VALID] = valid
    masked = a2c_loss(agent, batch, normalize_advantage=True)
    kept = a2c_loss(agent, batch[valid].exclude(keys.VALID), normalize_advantage=True)
    for name in kept:
        torch.testing.assert_close(masked[name], kept[name], msg=name)
    # No valid row at all: every term is 0, not the NaN of an empty mean.
    batch[keys.VALID] = torch.zeros(size, dtype=torch.bool)
    empty = a2c_loss(agent, batch, normalize_advantage=True)
    assert all(float(value.detach()) == 0.0 for value in empty.values()), empty


def test_one_step_batches_train_through_episode_ends(tmp_path, cartpole_run):
    # One env, one step a batch: the step after each episode's end is a reset step, a batch
    # with no valid row (it used to stop the run with "loss/policy is nan").
    state = train(cartpole_run("a2c", seed=3, num_envs=1, frames_per_batch=1, total_frames=300, output_dir=tmp_path))
    assert state.status == "completed", state.error
    assert state.episodes >= 2
    assert all(torch.isfinite(p).all() for p in state.run.algo.agent.parameters())
