"""Runs trained once per test session, one per family, whose folders the tests of eval, video, plot,
collect, resume and checkpoints copy instead of training their own.

Each is trained in this process (through ``rlcli train`` where the console output is also under
test); the session fixtures of ``tests/conftest.py`` call these functions. Under pytest-xdist each
worker trains its own.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from support.cli import CliResult, invoke
from support.paths import env_packages_importable
from support.run_folders import only_run_folder

ON_POLICY_FRAMES = 4096
"""ppo_cartpole's budget in the on-policy run: 8 iterations of 512 frames, a checkpoint every 2,048."""


@dataclass(frozen=True)
class TrainedRun:
    """A finished run: its folder and, for one trained through ``rlcli train``, what the command gave."""

    folder: Path
    result: CliResult | None = None
    """What ``rlcli train`` gave (exit status, stdout, stderr), if it ran."""

    @property
    def out(self) -> Path:
        """The ``--out`` folder the run folder was made in."""
        return self.folder.parent


def train_cli(out: Path, *args: str | Path) -> TrainedRun:
    """``rlcli train ARGS --out out`` in this process, which must succeed."""
    result = invoke("train", *args, "--out", out)
    assert result.returncode == 0, result.stdout + result.stderr
    return TrainedRun(only_run_folder(out), result)


def train_on_policy(base: Path) -> TrainedRun:
    """``rlcli train ppo_cartpole`` for 4,096 frames with checkpoints every 2,048, console output kept."""
    return train_cli(
        base / "runs",
        "ppo_cartpole",
        "--set",
        f"collector.total_frames={ON_POLICY_FRAMES}",
        "--set",
        "checkpoint.every_frames=2048",
    )


def train_off_policy(base: Path) -> TrainedRun:
    """SAC on 2 Pendulums, 16x16 networks, 480 frames, no final evaluation: a checkpoint holding its
    replay buffer."""
    from rlcli.config.load import validate_data
    from rlcli.run import build_run
    from rlcli.trainer.loop import train

    state = train(
        build_run(
            validate_data(
                {
                    "run": {"seed": 0, "device": "cpu", "output_dir": str(base)},
                    "env": {"id": "Pendulum-v1", "num_envs": 2},
                    "network": {"hidden_sizes": [16, 16]},
                    "algo": {"name": "sac", "batch_size": 16, "learning_starts": 32},
                    "collector": {"frames_per_batch": 8, "total_frames": 480},
                    "eval": {"final_episodes": 0},
                    "timing": {"enabled": False},
                }
            )
        )
    )
    return TrainedRun(state.run_dir)


def train_offline(base: Path) -> TrainedRun:
    """IQL for 40 gradient steps on a Minari dataset of 4 random Pendulum episodes, evaluated every 20
    (2 episodes), no final evaluation."""
    from rlcli.config.load import validate_data
    from rlcli.run import build_run
    from rlcli.trainer.loop import train
    from support.offline import random_dataset

    state = train(
        build_run(
            validate_data(
                {
                    "run": {"seed": 0, "device": "cpu", "output_dir": str(base)},
                    "env": {"id": "Pendulum-v1", "num_envs": 2},
                    "network": {"hidden_sizes": [16, 16]},
                    "algo": {"name": "iql", "batch_size": 16},
                    "data": {"dataset": random_dataset("Pendulum-v1"), "total_steps": 40, "steps_per_iteration": 20},
                    "eval": {"every_steps": 20, "episodes": 2, "final_episodes": 0},
                    "timing": {"enabled": False},
                }
            )
        )
    )
    return TrainedRun(state.run_dir)


def train_pixels(base: Path) -> TrainedRun:
    """``rlcli train --env-package rlcli_test_envs``: PPO on the corridor seen as a 3x16x16 uint8 image
    beside its position (a ``Dict`` observation: the image through the CNN that ``encoder = "auto"``
    picks), 640 frames."""
    env_packages_importable()
    config = base / "pixels.toml"
    config.write_text(
        '[env]\nid = "RlcliTest/DictCorridor-v0"\nnum_envs = 4\n\n'
        '[algo]\nname = "ppo"\nminibatch_size = 32\n\n'
        "[collector]\nframes_per_batch = 64\ntotal_frames = 640\n",
        encoding="utf-8",
    )
    return train_cli(base / "runs", config, "--env-package", "rlcli_test_envs", "--quiet")
