"""Atari through ale-py's vector env: the return column is the game score, frames stay uint8, and
bad ``[env]`` input is refused before any env is made (``rlcli validate`` in this process, through
Typer's runner). Integration: each Atari preset's smoke run through the real command. Skipped only
where ale-py is absent (``.ci/run`` installs the atari extra)."""

from __future__ import annotations

import csv
import sys

import numpy as np
import pytest
import torch

from rlcli import keys
from rlcli.config.errors import ConfigError
from rlcli.config.load import load_config
from rlcli.run import build_run
from rlcli.timing import Timer
from support.cli import assert_bad_input

pytest.importorskip("ale_py")

# Short enough to run in seconds, long enough to pass through a whole learn of each algorithm's preset
# (ppo_pong is ppo_breakout's settings on another game; tests/test_presets.py builds it and its env).
SMOKE = {
    # Games cut at 100 agent steps: the eval --video below plays whole ones.
    "ppo_breakout": [
        "collector.total_frames=256",
        "collector.frames_per_batch=256",
        "algo.minibatch_size=128",
        "algo.epochs=1",
        "env.kwargs.max_num_frames_per_episode=400",
    ],
    "dqn_breakout": ["collector.total_frames=512", "algo.learning_starts=256", "algo.replay.capacity=2000"],
}


@pytest.mark.integration
@pytest.mark.parametrize("preset", sorted(SMOKE))
def test_atari_presets_train_from_the_command_line(rlcli, tmp_path, preset):
    sets = [arg for item in SMOKE[preset] for arg in ("--set", item)]
    result = rlcli("train", preset, "--out", tmp_path, "--set", "env.num_envs=4", *sets, timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr
    (metrics,) = tmp_path.glob(f"{preset}*/metrics.csv")
    rows = list(csv.DictReader(metrics.open(encoding="utf-8")))
    assert rows and int(rows[-1]["frames"]) >= 256
    assert any(key.startswith("loss/") and row[key] not in ("", "nan") for row in rows for key in row), rows[-1]
    if preset == "ppo_breakout":
        # A game recorded from the frames the agent saw: ale-py's vector env draws none itself.
        pytest.importorskip("imageio")
        video = tmp_path / "game.mp4"
        played = rlcli("eval", metrics.parent, "--episodes", "1", "--video", video, timeout=300)
        assert played.returncode == 0, played.stdout + played.stderr
        assert video.stat().st_size > 1000


def _space_invaders(tmp_path, *extra: str):
    # Space Invaders pays 5 to 30 points an invader: random play scores far above its count of rewards.
    # Games cut at 300 agent steps: three batches of 128 steps an env end a game in each.
    return load_config(
        "ppo_breakout",
        [
            'env.id="ALE/SpaceInvaders-v5"',
            "env.num_envs=2",
            "collector.frames_per_batch=256",
            "algo.minibatch_size=128",
            "env.kwargs.max_num_frames_per_episode=1200",
            "run.device=cpu",
            f'run.output_dir="{tmp_path}"',
            *extra,
        ],
    )


def test_the_return_column_is_the_game_score_while_learning_sees_lost_lives_and_clipped_rewards(tmp_path):
    run = build_run(_space_invaders(tmp_path))
    try:
        timer = Timer(run.device)
        batch = torch.cat([run.source.next_batch(timer).clone() for _ in range(3)], 0)
        recorded = list(run.source.episode_stats.return_queue)
    finally:
        run.close()
    reward, valid = batch[keys.REWARD].numpy(), batch[keys.VALID].numpy()
    # A game ends where the next step is the env's reset step (ale-py resets in the next step).
    games: list[float] = []
    running = np.zeros(2)
    for t in range(reward.shape[0] - 1):
        running += np.where(valid[t], reward[t], 0.0)
        for n in np.flatnonzero(~valid[t + 1]):
            games.append(float(running[n]))
            running[n] = 0.0
    # The raw env rewards of the batch, summed over whole games, are the returns the run reports...
    assert games and recorded[: len(games)] == pytest.approx(games)
    # ...and they are game scores: points above 1 a step were kept, over every life.
    assert max(recorded) > 5 and batch[keys.REWARD].max() > 1
    # What the algorithm learns from ends at each lost life too (life_loss_info): more
    # terminations than games.
    assert int(batch[keys.TERMINATED].sum()) > len(games)


def test_learning_sees_rewards_clipped_to_clip_reward(tmp_path):
    from rlcli.learning.on_policy import prepare_rollout

    run = build_run(_space_invaders(tmp_path))
    try:
        batch = run.source.next_batch(Timer(run.device)).clone()
        for _ in range(3):
            if batch[keys.REWARD].max() > 1:
                break
            batch = run.source.next_batch(Timer(run.device)).clone()
        assert batch[keys.REWARD].max() > 1, "random play scored no invader in 768 frames"
        agent, scaler = run.algo.agent, run.algo.rollout.reward_scaler
        seen = []
        original = scaler.observe
        scaler.observe = lambda reward, done, valid: (seen.append(reward.clone()), original(reward, done, valid))
        prepare_rollout(agent, scaler, batch, gamma=0.99, lam=0.95, clip_reward=1.0)
    finally:
        run.close()
    assert float(seen[0].abs().max()) == 1.0
    # The batch itself keeps the env's own rewards.
    assert float(batch[keys.REWARD].max()) > 1


def test_frames_stay_uint8_from_the_env_to_the_encoder(tmp_path):
    run = build_run(_space_invaders(tmp_path))
    try:
        batch = run.source.next_batch(Timer(run.device))
        assert batch[keys.OBSERVATION].dtype == torch.uint8
        assert batch[keys.OBSERVATION].shape[-3:] == (4, 84, 84)
        assert run.source.host[keys.NEXT_OBSERVATION].dtype == torch.uint8
    finally:
        run.close()


@pytest.mark.parametrize(
    ("setting", "fragments"),
    [
        ("env.kwargs.reward_clipping=true", ("env.kwargs.reward_clipping", "clip_reward")),
        ("env.kwargs.episodic_life=true", ("env.kwargs.episodic_life", "restarts the whole game")),
        ("env.kwargs.frame_skip=4", ("env.kwargs.frame_skip", "frameskip")),
        ("env.kwargs.stack_num=2.5", ("env.kwargs.stack_num", "must be int")),
        ('env.id="ALE/Breakot-v5"', ("env.id", "ALE/Breakout-v5")),
    ],
)
def test_bad_atari_env_settings_are_refused_before_any_env_is_made(cli, setting, fragments):
    assert_bad_input(cli("validate", "ppo_breakout", "--set", setting), *fragments)


def test_a_missing_ale_py_names_the_atari_extra(cli, monkeypatch):
    # None in sys.modules makes `import ale_py` fail, as on an install without the extra (rlcli
    # imports it for each ALE/ id it validates, before it looks the id up).
    monkeypatch.setitem(sys.modules, "ale_py", None)
    assert_bad_input(cli("validate", "ppo_breakout"), "env.id", "atari extra", "rlcli[atari]")


def test_nature_cnn_on_a_vector_observation_is_refused(tmp_path):
    cfg = load_config("ppo_cartpole", ['network.encoder="nature_cnn"', f'run.output_dir="{tmp_path}"'])
    with pytest.raises(ConfigError) as caught:
        build_run(cfg)
    issue = caught.value.issues[0]
    assert issue.path == "network.encoder" and "reads images" in issue.message


def test_a_dqn_atari_buffer_that_cannot_fit_is_refused_with_its_frame_sizes(tmp_path):
    # One env: the preset's 8 would cost seconds to start, and the size of a transition is the same.
    cfg = load_config(
        "dqn_breakout",
        ["algo.replay.capacity=2000000000", "run.device=cpu", "env.num_envs=1", f'run.output_dir="{tmp_path}"'],
    )
    with pytest.raises(ConfigError) as caught:
        build_run(cfg)
    issue = caught.value.issues[0]
    # One 84x84 frame, the action, reward and flags a transition: about 7 kB, not two 4-frame stacks.
    assert (
        issue.path == "algo.replay.capacity" and "about 7,0" in issue.message and "lower the capacity" in issue.message
    )


def test_normalizing_image_observations_is_allowed_with_one_warning(tmp_path, capsys):
    from rlcli.algos import check_spaces
    from rlcli.envs import make_env

    cfg = load_config("ppo_breakout", [f'run.output_dir="{tmp_path}"'])
    env = make_env(cfg.env)
    try:
        check_spaces("ppo", cfg.env.id, env.observation_space, env.action_space, None, normalize=True)
    finally:
        env.close()
    assert "normalize_observation is on" in capsys.readouterr().err


def test_ale_envs_are_not_taken_for_exactly_resumable(tmp_path):
    # Their emulators live in C++: a resume resets them (seeded) instead of acting on a stale observation.
    from rlcli.collectors import envstate
    from rlcli.envs import make_envs

    envs = make_envs(load_config("ppo_breakout", ["env.num_envs=2"]).env)
    try:
        envs.reset(seed=0)
        assert envstate.capture(envs)["exact"] is False
    finally:
        envs.close()


def _breakout_games(envs, action: int, games: int, limit: int) -> list[int]:
    """Agent steps of each of the first ``games`` games that ``envs`` (ale-py's vector env, NEXT_STEP) play
    with ``action`` on every step; a game still running after ``limit`` steps counts as ``limit``."""
    envs.reset(seed=0)
    n = envs.num_envs
    steps, lengths = np.zeros(n, dtype=np.int64), []
    resetting = np.zeros(n, dtype=bool)
    for _ in range(limit):
        _, _, terminated, truncated, _ = envs.step(np.full(n, action, dtype=np.int64))
        steps += ~resetting
        ended = (terminated | truncated) & ~resetting
        lengths += steps[ended].tolist()
        steps[ended] = 0
        resetting = ended
        if len(lengths) >= games:
            return lengths[:games]
    return lengths + [limit] * (games - len(lengths))


@pytest.mark.parametrize("life_loss_info", [True, False])
def test_a_policy_that_never_presses_fire_ends_every_breakout_game_within_5000_steps(life_loss_info):
    from rlcli.envs import make_envs

    cfg = load_config("ppo_breakout", ["env.num_envs=2", f"env.kwargs.life_loss_info={str(life_loss_info).lower()}"])
    envs = make_envs(cfg.env)
    try:
        # NOOP (0) and RIGHT (2): neither launches the ball, FIRE after each lost life does.
        for action in (0, 2):
            lengths = _breakout_games(envs, action, games=4, limit=5000)
            assert max(lengths) < 5000, (action, lengths)
    finally:
        envs.close()


def test_without_fire_reset_a_lost_life_waits_for_the_agent_to_fire():
    from rlcli.envs import make_envs

    # What the rule above prevents: the ball is never launched again after the first lost life.
    cfg = load_config("ppo_breakout", ["env.num_envs=1", "env.kwargs.use_fire_reset=false"])
    envs = make_envs(cfg.env)
    try:
        assert _breakout_games(envs, 0, games=1, limit=2000) == [2000]
    finally:
        envs.close()


def test_fire_replaces_only_the_first_action_after_a_lost_life():
    import gymnasium as gym
    from gymnasium.vector import VectorWrapper

    from rlcli.envs import AtariLives, make_envs

    class Played(VectorWrapper):
        def __init__(self, env):
            super().__init__(env)
            self.actions = []

        def step(self, actions):
            self.actions.append(np.array(actions))
            return self.env.step(actions)

    cfg = load_config("ppo_breakout", ["env.num_envs=2"])
    inner = make_envs(cfg.env).env.env  # RecordEpisodeStatistics -> AtariLives -> ale-py's vector env
    assert isinstance(inner, gym.vector.VectorEnv) and not isinstance(inner, AtariLives)
    played = Played(inner)
    envs = AtariLives(played, split=True, fire=1)
    try:
        envs.reset(seed=0)
        lost_at = []
        for t in range(400):
            _, _, _, _, info = envs.step(np.array([3, 2], dtype=np.int64))
            lost_at += [(t, i) for i in np.flatnonzero(info["life_lost"])]
        assert lost_at
        forced = {(t + 1, i) for t, i in lost_at}
        for t, actions in enumerate(played.actions):
            for i in range(2):
                assert actions[i] == (1 if (t, i) in forced else (3, 2)[i]), (t, i, actions)
    finally:
        envs.close()
