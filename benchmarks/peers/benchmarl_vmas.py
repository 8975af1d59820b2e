"""BenchMARL's own ``Experiment`` on a VMAS task, timed and then evaluated deterministically: the peer side of
issue 46's bar beside rlcli's ``mappo_vmas_balance``, ``ippo_vmas_balance`` and ``mappo_vmas_navigation``.

Nothing of BenchMARL's settings is copied by hand: the experiment, the algorithm (``MappoConfig`` or
``IppoConfig``), the task (``VmasTask.BALANCE`` or ``NAVIGATION``) and both MLPs are read from BenchMARL's
installed yaml files (``get_from_yaml``), as its own examples do. This script changes only what the bar
fixes, and writes every setting it ran into its JSON line:

- ``max_n_frames`` (the budget) and, with ``--lr``, the learning rate (the bar's fallback to 3e-4);
- evaluation, loggers, the json file and checkpoints off (the bar: evaluation the same on both sides or off
  on both; rlcli's side runs with in-training evaluation off and its final evaluation apart);
- ``save_folder`` a temporary folder (BenchMARL writes its hydra-less config there).

The training wall time is ``Experiment.run()`` alone (what BenchMARL's ``timers/total_time`` sums, plus its
progress bar); building the experiment is timed apart. Then the trained policy (``experiment.policy``, as
BenchMARL's own evaluation loop plays it) plays ``--episodes`` episodes side by side in one VMAS env of that
many sub-envs, seeded with ``--eval-seed``, under ``ExplorationType.DETERMINISTIC``; an episode's return is
counted as BenchMARL's logger counts it (cut at its first done, rewards summed over time, averaged over the
group's agents, averaged over groups). The training return per iteration (``experiment.mean_return``, the mean
return of the episodes that ended in the iteration's batch) is kept too, to tell whether the base learning
rate improved on the first iteration.

Runs in the BenchMARL peer venv (requirements-benchmarl.txt), never rlcli's; prints one JSON line:

    python benchmarks/peers/benchmarl_vmas.py --algo mappo --task balance --seed 0 --frames 300000 --threads 1
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import sys
import tempfile
import time
from importlib import metadata

from benchmarl.experiment import Callback
from zoo_run import jsonable  # the peer scripts' one way of writing what ran (stdlib only)


class Returns(Callback):
    """The training return of each iteration (BenchMARL's progress bar figure); a module-level class, since
    BenchMARL pickles its callbacks."""

    def __init__(self):
        super().__init__()
        self.iterations: list[dict] = []

    def on_batch_collected(self, batch):
        self.iterations.append({"frames": self.experiment.total_frames, "mean_return": self.experiment.mean_return})


def evaluate(experiment, episodes: int, seed: int) -> list[float]:
    """``episodes`` deterministic episodes of the trained policy, returns as BenchMARL's logger counts them."""
    import torch
    from tensordict.nn import set_interaction_type
    from torchrl.envs import Compose, TransformedEnv
    from torchrl.envs.utils import ExplorationType

    task = experiment.task
    env = task.get_env_fun(
        num_envs=episodes, continuous_actions=experiment.continuous_actions, seed=seed, device="cpu"
    )()
    env = TransformedEnv(env, Compose(*task.get_env_transforms(env)))
    env = experiment.algorithm.process_env_fun(lambda: env)()
    with torch.no_grad(), set_interaction_type(ExplorationType.DETERMINISTIC):
        rollout = env.rollout(
            max_steps=experiment.max_steps,
            policy=experiment.policy,
            auto_cast_to_device=True,
            break_when_any_done=False,
        )
    env.close()
    returns = []
    for episode in rollout.unbind(0):
        done = episode.get(("next", "done")).reshape(episode.batch_size[0], -1).any(-1)
        ends = done.nonzero()
        if ends.numel():
            episode = episode[: int(ends[0, 0]) + 1]
        groups = [episode.get(("next", group, "reward")).sum(0).mean() for group in experiment.group_map]
        returns.append(float(torch.stack(groups).mean()))
    return returns


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--algo", choices=("mappo", "ippo"), default="mappo")
    parser.add_argument("--task", choices=("balance", "navigation"), default="balance")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--frames", type=int, default=300_000, help="max_n_frames (default 300000)")
    parser.add_argument("--lr", type=float, default=None, help="the learning rate (default: BenchMARL's yaml)")
    parser.add_argument("--threads", type=int, default=1, help="torch threads (default 1)")
    parser.add_argument("--episodes", type=int, default=200, help="evaluation episodes (default 200)")
    parser.add_argument("--eval-seed", type=int, default=1_000_000)
    args = parser.parse_args()

    import torch
    from benchmarl.algorithms import IppoConfig, MappoConfig
    from benchmarl.environments import VmasTask
    from benchmarl.experiment import Experiment, ExperimentConfig
    from benchmarl.models.mlp import MlpConfig

    torch.set_num_threads(args.threads)
    config = ExperimentConfig.get_from_yaml()
    changed = {
        "max_n_frames": args.frames,
        "evaluation": False,
        "render": False,
        "loggers": [],
        "create_json": False,
        "checkpoint_interval": 0,
        "checkpoint_at_end": False,
        "save_folder": tempfile.mkdtemp(prefix="benchmarl-"),
    }
    if args.lr is not None:
        changed["lr"] = args.lr
    for name, value in changed.items():
        setattr(config, name, value)
    task = {"balance": VmasTask.BALANCE, "navigation": VmasTask.NAVIGATION}[args.task].get_from_yaml()
    algorithm = {"mappo": MappoConfig, "ippo": IppoConfig}[args.algo].get_from_yaml()
    model, critic = MlpConfig.get_from_yaml(), MlpConfig.get_from_yaml()

    returns_callback = Returns()
    start = time.perf_counter()
    experiment = Experiment(
        task=task,
        algorithm_config=algorithm,
        model_config=model,
        critic_model_config=critic,
        seed=args.seed,
        config=config,
        callbacks=[returns_callback],
    )
    built = time.perf_counter()
    experiment.run()
    trained = time.perf_counter()
    iterations = returns_callback.iterations
    returns = evaluate(experiment, args.episodes, args.eval_seed)
    evaluated = time.perf_counter()
    line = {
        "peer": "benchmarl",
        "algo": args.algo,
        "task": f"vmas/{args.task}",
        "seed": args.seed,
        "frames": experiment.total_frames,
        "build_s": built - start,
        "train_s": trained - built,
        "frames_per_s": experiment.total_frames / (trained - built),
        "eval_s": evaluated - trained,
        "eval_episodes": len(returns),
        "eval_seed": args.eval_seed,
        "eval_return_mean": statistics.fmean(returns),
        "eval_return_median": statistics.median(returns),
        "first_iteration_return": iterations[0]["mean_return"] if iterations else None,
        "last_iteration_return": iterations[-1]["mean_return"] if iterations else None,
        "iterations": iterations,
        "threads": args.threads,
        "changed": jsonable(changed),
        "experiment_config": jsonable(config),
        "task_config": {"task": task.name, **jsonable(task.config)},
        "algorithm_config": jsonable(algorithm),
        "model_config": jsonable(model),
        "critic_model_config": jsonable(critic),
        "versions": {
            "python": platform.python_version(),
            **{d: metadata.version(d) for d in ("benchmarl", "torchrl", "tensordict", "torch", "vmas")},
        },
        "machine": platform.processor() or platform.machine(),
        "argv": sys.argv[1:],
    }
    print(json.dumps(line))


if __name__ == "__main__":
    main()
