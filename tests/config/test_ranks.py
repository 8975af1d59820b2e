"""The per-rank shares of a config (config/ranks.py): what each of N ranks trains on, and the sizes
that do not split."""

from rlcli.config.load import load_config, validate_data
from rlcli.config.presets import find_preset
from rlcli.config.ranks import rank_config, rank_problems


def test_split_shares_out_envs_batches_and_algorithm_sizes():
    cfg = load_config(find_preset("dqn_cartpole"), ['run.parallel="split"'])
    assert rank_problems(cfg, 2) == []
    local = rank_config(cfg, 2)
    assert local.env.num_envs * 2 == cfg.env.num_envs
    assert local.collector.frames_per_batch * 2 == cfg.collector.frames_per_batch
    # The same iterations, so that schedules over the run keep their length.
    assert local.collector.iterations == cfg.collector.iterations
    assert local.algo.batch_size * 2 == cfg.algo.batch_size
    assert local.algo.utd_ratio == cfg.algo.utd_ratio * 2
    assert local.algo.learning_starts == -(-cfg.algo.learning_starts // 2)
    # Each rank's buffer counts only its own frames.
    assert local.algo.replay.capacity * 2 == cfg.algo.replay.capacity
    assert local.algo.replay.beta_frames * 2 == cfg.algo.replay.beta_frames
    ppo = load_config(find_preset("ppo_cartpole"), ['run.parallel="split"'])
    assert rank_config(ppo, 2).algo.minibatch_size * 2 == ppo.algo.minibatch_size


def test_split_names_every_size_that_does_not_divide():
    cfg = load_config(find_preset("dqn_cartpole"), ['run.parallel="split"', "algo.batch_size=65"])
    problems = dict(rank_problems(cfg, 3))
    assert set(problems) == {"env.num_envs", "algo.batch_size"}
    assert "multiple of the world size (3)" in problems["env.num_envs"]


def test_replicate_keeps_the_config_and_counts_every_ranks_frames():
    cfg = load_config(find_preset("ppo_cartpole"), ["collector.total_frames=10000"])
    assert rank_problems(cfg, 3) == []
    local = rank_config(cfg, 2)
    assert local.env == cfg.env and local.algo == cfg.algo
    assert local.collector.frames_per_batch == cfg.collector.frames_per_batch
    # 10,000 frames over 2 ranks of 512 per iteration: 10 iterations (10,240 frames in all).
    assert local.collector.iterations == 10
    assert rank_config(cfg, 1) is cfg


def test_an_offline_run_is_refused_on_several_ranks_and_runs_as_is_on_one():
    cfg = validate_data(
        {"env": {"id": "Pendulum-v1"}, "algo": {"name": "iql"}, "data": {"dataset": "pendulum/medium-v0"}}
    )
    assert rank_problems(cfg, 1) == [] and rank_config(cfg, 1) is cfg
    ((path, message),) = rank_problems(cfg, 2)
    assert path == "data" and "one process" in message
