"""d3rlpy 2.8's IQL or CQL on a Minari dataset with rlcli's preset hyperparameters: training seconds and score.

The peer figure of rlcli's ``iql_pendulum_medium`` and ``cql_pendulum_medium`` presets
(``rlcli_offline.py`` is rlcli's side; ``compare_offline.sh`` runs both, one after the other).

Data: the Minari dataset ``--dataset`` (default pendulum/medium-v0, from ``MINARI_DATASETS_PATH``;
``rlcli datasets make`` writes it) as a d3rlpy ``MDPDataset``: terminals = Minari's
terminations, timeouts = its truncations. d3rlpy keeps no final observation: an episode of L steps is
L rows, and a timed-out one gives L - 1 transitions (the last row has no next observation). So a
truncated episode gets its final observation as an extra row (action 0, reward 0, timeout 1), which
keeps all L of its transitions with their true next observations; that row's action and reward are
never a transition's own (IQL and CQL read no ``next_action`` and no returns-to-go). A terminated
episode is its L rows with terminal 1 on the last. (d3rlpy's own ``datasets.get_minari`` stacks the
L + 1 observations beside the L actions, which shifts every later episode by a row; it is not used.)

Algorithm, as rlcli's presets set it (``--hidden`` ReLU layers, default 256x256, for every network, through
d3rlpy's ``VectorEncoderFactory``; batch 256; gamma 0.99; tau 0.005; Adam with betas (0.9, 0.999), eps 1e-8,
no weight decay, no clipping; observations standardized over the dataset by
``StandardObservationScaler``; actions scaled from the env's bounds to [-1, 1] by
``MinMaxActionScaler``, since d3rlpy's policies are tanh-bounded to [-1, 1] where rlcli's rescale to
the bounds):

- IQL: ``IQLConfig(expectile=0.7, weight_temp=3.0, max_weight=100.0, actor_learning_rate=3e-4,
  critic_learning_rate=3e-4, n_critics=2)``; the value net shares the critic's optimizer (lr 3e-4).
- CQL: ``CQLConfig(conservative_weight=5.0, n_action_samples=10, actor_learning_rate=1e-4,
  critic_learning_rate=3e-4, temp_learning_rate=1e-4, initial_temperature=1.0, n_critics=2,
  alpha_learning_rate=0.0, initial_alpha=1.0)``: with alpha_learning_rate 0 d3rlpy makes no alpha
  optimizer, so the Lagrange multiplier stays exp(log 1) = 1 and the critic loss gets
  ``5 * (gap - alpha_threshold)``, whose threshold term is a constant: rlcli's ``lagrange = false``.
  soft_q_backup and max_q_backup stay False (d3rlpy's defaults): the target takes the policy's mean
  action at s', with no entropy term (rlcli: a sampled action, ``backup_entropy = false``).

Timing: ``d3rlpy.seed(--seed)``; CPU, ``torch.set_num_threads(--threads)`` (default 1). Before the
clock starts, the observation scaler is fitted and the networks built (what ``fit`` does first:
``setup_seconds``); then ``fit(n_steps=--steps, n_steps_per_epoch=--steps)`` with no evaluator, a
no-op logger and no progress bar is timed with ``perf_counter`` (``train_seconds``). Then the mean
action (``predict``) plays 10 episodes of the dataset's env (Pendulum-v1), reset with seeds
1000000 + i. Prints one JSON line on stdout (d3rlpy's log goes to stderr), with the whole d3rlpy config
that ran (``settings``: every field, the fitted scalers' statistics included). There is no peer tuning to
run here (RL-Zoo has no offline rows): the settings are this script's own, mirroring rlcli's presets.

Needs a venv of its own, never rlcli's (versions pinned in requirements-d3rlpy.txt):

    python3.11 -m venv /tmp/peer-d3rlpy
    /tmp/peer-d3rlpy/bin/pip install -r benchmarks/peers/requirements-d3rlpy.txt
    MINARI_DATASETS_PATH=/tmp/minari-data2 /tmp/peer-d3rlpy/bin/python benchmarks/peers/d3rlpy_offline.py \\
        --algo iql --steps 50000 --seed 0
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
import time
from importlib.metadata import version

import d3rlpy
import gymnasium as gym
import minari
import numpy as np
import structlog
import torch
from d3rlpy.dataset import MDPDataset
from d3rlpy.logging import NoopAdapterFactory
from d3rlpy.models.encoders import VectorEncoderFactory
from d3rlpy.optimizers import AdamFactory
from d3rlpy.preprocessing import MinMaxActionScaler, StandardObservationScaler

EVAL_EPISODES = 10
EVAL_SEED = 1_000_000


def mdp_dataset(dataset_id: str) -> tuple[MDPDataset, str, gym.spaces.Box]:
    """The Minari dataset as an MDPDataset (see the module docstring), its env id and action space."""
    data = minari.load_dataset(dataset_id)
    columns: dict[str, list[np.ndarray]] = {"obs": [], "act": [], "rew": [], "term": [], "tout": []}
    for episode in data.iterate_episodes():
        length = len(episode.actions)
        actions = np.asarray(episode.actions, dtype=np.float32).reshape(length, -1)
        rewards = np.asarray(episode.rewards, dtype=np.float32)
        flags = np.zeros(length, dtype=np.float32)
        if episode.terminations[-1]:
            flags[-1] = 1.0
            parts = (episode.observations[:length], actions, rewards, flags, np.zeros(length, np.float32))
        else:
            pad = np.zeros(length + 1, dtype=np.float32)
            pad[-1] = 1.0
            parts = (
                episode.observations,
                np.concatenate([actions, np.zeros_like(actions[:1])]),
                np.append(rewards, np.float32(0.0)),
                np.zeros(length + 1, np.float32),
                pad,
            )
        for key, part in zip(columns, parts):
            columns[key].append(part)
    obs, act, rew, term, tout = (np.concatenate(columns[key]) for key in columns)
    dataset = MDPDataset(observations=obs.astype(np.float32), actions=act, rewards=rew, terminals=term, timeouts=tout)
    return dataset, data.spec.env_spec.id, data.action_space


def make_algo(algo: str, action_space: gym.spaces.Box, hidden: list[int]):
    """The d3rlpy algorithm with rlcli's preset hyperparameters and ``hidden`` layer widths (see the module
    docstring)."""
    net = VectorEncoderFactory(hidden_units=hidden, activation="relu")
    adam = AdamFactory(betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0)
    common = {
        "batch_size": 256,
        "gamma": 0.99,
        "tau": 0.005,
        "n_critics": 2,
        "observation_scaler": StandardObservationScaler(),
        "action_scaler": MinMaxActionScaler(minimum=action_space.low, maximum=action_space.high),
        "actor_encoder_factory": net,
        "critic_encoder_factory": net,
        "actor_optim_factory": adam,
        "critic_optim_factory": adam,
    }
    if algo == "iql":
        config = d3rlpy.algos.IQLConfig(
            **common,
            value_encoder_factory=net,
            expectile=0.7,
            weight_temp=3.0,
            max_weight=100.0,
            actor_learning_rate=3e-4,
            critic_learning_rate=3e-4,
        )
    else:
        config = d3rlpy.algos.CQLConfig(
            **common,
            conservative_weight=5.0,
            n_action_samples=10,
            actor_learning_rate=1e-4,
            critic_learning_rate=3e-4,
            temp_learning_rate=1e-4,
            temp_optim_factory=adam,
            initial_temperature=1.0,
            alpha_learning_rate=0.0,
            initial_alpha=1.0,
            soft_q_backup=False,
            max_q_backup=False,
        )
    return config.create(device="cpu:0")


def config_dict(value):
    """A d3rlpy config (a dataclass of dataclasses: encoders, optimizers, scalers) as plain JSON values."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        fields = {f.name: config_dict(getattr(value, f.name)) for f in dataclasses.fields(value)}
        return {"type": type(value).__qualname__, **fields}
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, (list, tuple)):
        return [config_dict(v) for v in value]
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    return repr(value)


def evaluate(algo, env_id: str) -> list[float]:
    """Returns of ``EVAL_EPISODES`` episodes of the mean action, reset with seeds EVAL_SEED + i."""
    env = gym.make(env_id)
    returns = []
    for i in range(EVAL_EPISODES):
        obs, _ = env.reset(seed=EVAL_SEED + i)
        total, done = 0.0, False
        while not done:
            action = algo.predict(np.asarray(obs, dtype=np.float32)[None])[0]
            obs, reward, terminated, truncated, _ = env.step(action)
            total += float(reward)
            done = terminated or truncated
        returns.append(total)
    env.close()
    return returns


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--algo", choices=("iql", "cql"), required=True)
    parser.add_argument("--steps", type=int, default=50_000, help="gradient steps (default 50000)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--dataset", default="pendulum/medium-v0", help="Minari dataset id")
    parser.add_argument("--threads", type=int, default=1, help="torch intra-op threads (default 1)")
    parser.add_argument("--hidden", default="256,256", help="hidden layer widths of every network (default 256,256)")
    args = parser.parse_args()
    hidden = [int(width) for width in args.hidden.split(",")]
    # d3rlpy logs through structlog to stdout; stdout is kept for the JSON line.
    structlog.configure(logger_factory=structlog.PrintLoggerFactory(sys.stderr))
    torch.set_num_threads(args.threads)
    d3rlpy.seed(args.seed)

    dataset, env_id, action_space = mdp_dataset(args.dataset)
    algo = make_algo(args.algo, action_space, hidden)
    start = time.perf_counter()
    # What fit does before its loop; done here so that the clock holds the gradient steps alone.
    algo.observation_scaler.fit_with_transition_picker(dataset.episodes, dataset.transition_picker)
    algo.build_with_dataset(dataset)
    setup = time.perf_counter() - start

    start = time.perf_counter()
    algo.fit(
        dataset,
        n_steps=args.steps,
        n_steps_per_epoch=args.steps,
        logger_adapter=NoopAdapterFactory(),
        show_progress=False,
        evaluators=None,
        save_interval=args.steps + 1,
    )
    seconds = time.perf_counter() - start

    returns = evaluate(algo, env_id)
    print(
        json.dumps(
            {
                "peer": "d3rlpy",
                "version": version("d3rlpy"),
                "algo": args.algo,
                "steps": args.steps,
                "train_seconds": seconds,
                "eval_return_mean": float(np.mean(returns)),
                "eval_return_std": float(np.std(returns)),
                "seed": args.seed,
                "dataset": args.dataset,
                "hidden": hidden,
                "transitions": dataset.transition_count,
                "setup_seconds": setup,
                # RL-Zoo has no offline rows: these are this script's own settings, mirroring rlcli's presets.
                "settings": config_dict(algo.config),
                "threads": torch.get_num_threads(),
                "versions": {name: version(name) for name in ("d3rlpy", "torch", "gymnasium", "minari", "numpy")},
            }
        )
    )


if __name__ == "__main__":
    main()
