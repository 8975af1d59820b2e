"""sb3-contrib's RecurrentPPO on the velocity-hidden control tasks, run by RL-Baselines3-Zoo itself
(``rl_zoo3.train --algo ppo_lstm``, its installed hyperparams/ppo_lstm.yml): the peer side of rlcli's
recurrent PPO (presets/ppo_lstm_cartpolenovel.toml, presets/ppo_lstm_pendulumnovel.toml).

Runs in the RL-Zoo peer venv (sb3-contrib and rl_zoo3 are never dependencies of rlcli):

    python3.11 -m venv /tmp/peer-rlzoo
    /tmp/peer-rlzoo/bin/pip install -r benchmarks/peers/requirements-rlzoo.txt
    /tmp/peer-rlzoo/bin/python benchmarks/peers/sb3_contrib_recurrent.py \\
        --env CartPoleNoVel-v1 --seeds 0 1 2 --json cartpolenovel.json
    /tmp/peer-rlzoo/bin/python benchmarks/peers/sb3_contrib_recurrent.py \\
        --env PendulumNoVel-v1 --seeds 0 1 2 --json pendulumnovel.json

Nothing of the Zoo's settings is copied here. For each seed, one after another in one process, the Zoo's
own entry point runs as a user would run it:

    python -m rl_zoo3.train --algo ppo_lstm --env ENV --seed SEED --eval-freq -1 --device cpu \\
        --num-threads 1 --log-folder TMP --verbose 0 [-n TIMESTEPS]

so the Zoo reads the yml entry, builds the envs (its NoVel ids, registered by rl_zoo3: the base task under
``MaskVelocityWrapper``), wraps them in ``VecNormalize`` where the entry says ``normalize``, evaluates the
entry's ``policy_kwargs`` string, makes the schedules and builds ``RecurrentPPO``. Two of the Zoo's
methods are wrapped, not replaced: ``read_hyperparameters`` (to keep the entry as read) and
``ExperimentManager.learn``, which is timed alone (train_seconds) and followed by:

* a check that the model the Zoo built holds every key of the yml entry (``check_against_yml``: the
  LSTM sizes, critic LSTM, activation, init, net_arch, the normalization wrapper and its gamma, each
  schedule's value at two points of training, every other key as the model's attribute); a key it
  cannot check stops the script, so the JSON never claims a setting nobody looked at;
* a deterministic evaluation as the Zoo's enjoy plays: episode i of N on the Zoo's eval env
  (``create_envs(1, eval_env=True)``: ``VecNormalize`` frozen, rewards not normalized, holding the
  trained observation statistics) reset with seed 10_000 + i, the LSTM state and episode starts carried
  through ``model.predict(..., deterministic=True)``; the return is the Monitor's raw episode return.

seed_seconds covers the Zoo's whole ``train()`` for that seed (reading the yml, building, learning,
checking, evaluating and the Zoo's saving of the model into a temporary folder). process_seconds runs from
the start of ``main`` (before torch, sb3 and rl_zoo3 are imported) to the moment the JSON is written.
The JSON holds the complete settings run: the yml entry as read, the keyword arguments the Zoo passed to
``RecurrentPPO`` (policy_kwargs resolved), the normalization, the model's values read back (the defaults
included), the Zoo command and the package versions.
"""

from __future__ import annotations

import argparse
import copy
import json
import statistics
import time

from zoo_run import jsonable, run_zoo, versions, zoo_argv

ENVS = ("CartPoleNoVel-v1", "PendulumNoVel-v1")
EVAL_SEED_BASE = 10_000
# What the policy_kwargs keys of ppo_lstm.yml read back as on sb3-contrib's RecurrentActorCriticPolicy.
POLICY_READBACK = {
    "lstm_hidden_size": lambda p: p.lstm_actor.hidden_size,
    "n_lstm_layers": lambda p: p.lstm_actor.num_layers,
    "enable_critic_lstm": lambda p: p.lstm_critic is not None,
    "shared_lstm": lambda p: p.shared_lstm,
    "activation_fn": lambda p: p.activation_fn,
    "ortho_init": lambda p: p.ortho_init,
    "net_arch": lambda p: p.net_arch,
}
SCHEDULES = ("learning_rate", "clip_range")


def expected_schedule(entry_value, progress_remaining: float) -> float:
    """The yml's schedule at ``progress_remaining``: ``lin_X`` decays from X to 0, a number stays."""
    if isinstance(entry_value, str):
        kind, start = entry_value.split("_")
        if kind != "lin":
            raise RuntimeError(f"no check for the schedule {entry_value!r}")
        return float(start) * progress_remaining
    return float(entry_value)


def check_against_yml(entry: dict, manager, model, timesteps: int | None) -> list[str]:
    """Every key of the yml ``entry`` compared with what the Zoo built; the keys checked.

    ``timesteps`` is the budget asked for on the command line (None: the yml's).

    Raises RuntimeError naming each key that differs or that this check cannot read back.
    """
    from torch import nn

    wrong, checked = [], []

    def same(key: str, want, got) -> None:
        checked.append(key)
        if want != got and not (isinstance(want, float) and abs(want - got) <= 1e-12 * max(1.0, abs(want))):
            wrong.append(f"{key}: the yml says {want!r}, the model has {got!r}")

    for key, value in entry.items():
        if key == "n_envs":
            same(key, value, model.n_envs)
        elif key == "n_timesteps":
            # --timesteps (the Zoo's -n) may shorten a smoke run; the JSON has both.
            same(key, int(value) if timesteps is None else timesteps, manager.n_timesteps)
        elif key == "policy":
            same(key, model.policy_aliases[value], model.policy_class)
        elif key == "normalize":
            if value is not True:
                raise RuntimeError(f"no check for normalize = {value!r}")
            norm = model.get_vec_normalize_env()
            same(key, True, norm is not None and norm.norm_obs and norm.norm_reward)
            same("normalize.gamma", entry["gamma"], None if norm is None else norm.gamma)
        elif key == "policy_kwargs":
            # The Zoo evaluates this string with torch.nn in scope; evaluated here again, on its own.
            want = eval(value, {"__builtins__": {}, "dict": dict, "nn": nn}) if isinstance(value, str) else value
            same("policy_kwargs (as the Zoo resolved them)", want, manager._hyperparams["policy_kwargs"])
            for name, wanted in want.items():
                if name not in POLICY_READBACK:
                    raise RuntimeError(f"no check for policy_kwargs[{name!r}]")
                same(f"policy_kwargs.{name}", wanted, POLICY_READBACK[name](model.policy))
        elif key in SCHEDULES:
            schedule = model.lr_schedule if key == "learning_rate" else model.clip_range
            for progress in (1.0, 0.25):
                same(f"{key}({progress})", expected_schedule(value, progress), float(schedule(progress)))
        elif hasattr(model, key) and isinstance(value, (bool, int, float)):
            same(key, value, getattr(model, key))
        else:
            raise RuntimeError(f"no check for the yml key {key!r} = {value!r}")
    if wrong:
        raise RuntimeError("the model the Zoo built differs from its yml:\n  " + "\n  ".join(wrong))
    return checked


def read_back(model) -> dict:
    """The values RecurrentPPO ran with, the ones the yml leaves at their defaults included."""
    policy = model.policy
    norm = model.get_vec_normalize_env()
    return {
        "algorithm": type(model).__qualname__,
        "policy": type(policy).__qualname__,
        "n_envs": model.n_envs,
        **{k: getattr(model, k) for k in ("n_steps", "batch_size", "n_epochs", "gamma", "gae_lambda")},
        **{k: getattr(model, k) for k in ("ent_coef", "vf_coef", "max_grad_norm", "normalize_advantage")},
        **{k: getattr(model, k) for k in ("use_sde", "sde_sample_freq", "target_kl")},
        "learning_rate at progress 1, 0.5, 0": [float(model.lr_schedule(p)) for p in (1.0, 0.5, 0.0)],
        "clip_range at progress 1, 0.5, 0": [float(model.clip_range(p)) for p in (1.0, 0.5, 0.0)],
        "clip_range_vf": jsonable(model.clip_range_vf),
        **{name: jsonable(read(policy)) for name, read in POLICY_READBACK.items()},
        "optimizer": type(policy.optimizer).__qualname__,
        "normalization": None
        if norm is None
        else {k: getattr(norm, k) for k in ("norm_obs", "norm_reward", "gamma", "clip_obs", "clip_reward", "epsilon")},
    }


def evaluate(manager, model, episodes: int) -> list[float]:
    """Deterministic returns of ``episodes`` episodes on the Zoo's eval env, the LSTM state carried."""
    import numpy as np
    from stable_baselines3.common.vec_env import VecNormalize

    test = manager.create_envs(1, eval_env=True, no_log=True)
    trained = model.get_vec_normalize_env()
    if trained is not None:
        # As enjoy loads vecnormalize.pkl: the trained statistics, frozen, and raw rewards.
        assert isinstance(test, VecNormalize) and not test.training and not test.norm_reward
        test.obs_rms = copy.deepcopy(trained.obs_rms)
    returns = []
    for i in range(episodes):
        test.seed(EVAL_SEED_BASE + i)
        obs = test.reset()
        state, start = None, np.ones((1,), dtype=bool)
        while True:
            action, state = model.predict(obs, state=state, episode_start=start, deterministic=True)
            obs, _, start, infos = test.step(action)
            if start[0]:
                returns.append(float(infos[0]["episode"]["r"]))
                break
    test.close()
    return returns


def run_seed(env_id: str, seed: int, timesteps: int | None, threads: int, episodes: int) -> tuple[dict, dict]:
    """One ``rl_zoo3.train`` of ``seed``: its row and the settings it ran."""
    argv = zoo_argv("ppo_lstm", env_id, seed, timesteps=timesteps, threads=threads)

    def learn(manager, model, zoo_learn, entry: dict) -> dict:
        t0 = time.perf_counter()
        zoo_learn(manager, model)
        train_seconds = time.perf_counter() - t0
        checked = check_against_yml(entry, manager, model, timesteps)
        t0 = time.perf_counter()
        returns = evaluate(manager, model, episodes)
        return {
            "train_seconds": train_seconds,
            "frames": int(model.num_timesteps),
            "checked": checked,
            "model": read_back(model),
            "returns": returns,
            "eval_seconds": time.perf_counter() - t0,
        }

    started = time.perf_counter()
    ran = run_zoo(argv, learn)
    returns = ran["returns"]
    row = {
        "seed": seed,
        "timesteps": ran["settings"]["n_timesteps_run"],
        "frames": ran["frames"],
        "train_seconds": ran["train_seconds"],
        "eval_seconds": ran["eval_seconds"],
        "seed_seconds": time.perf_counter() - started,
        "eval_episodes": episodes,
        "eval_mean": statistics.fmean(returns),
        "eval_std": statistics.pstdev(returns),
        "eval_min": min(returns),
        "eval_max": max(returns),
        "eval_returns": returns,
        "zoo_command": ran["zoo_command"],
    }
    return row, {**ran["settings"], "model": ran["model"], "checked_against_yml": ran["checked"]}


def main(argv: list[str] | None = None) -> None:
    process_start = time.perf_counter()
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--env", required=True, choices=ENVS)
    parser.add_argument("--seeds", type=int, nargs="+", default=[0])
    parser.add_argument(
        "--timesteps", type=int, default=None, help="training frames (default: the yml's n_timesteps, 100000)"
    )
    parser.add_argument("--eval-episodes", type=int, default=100)
    parser.add_argument("--threads", type=int, default=1, help="torch threads (the Zoo's --num-threads; default 1)")
    parser.add_argument("--json", metavar="OUT", help="write the results here")
    args = parser.parse_args(argv)

    results, settings = [], None
    for seed in args.seeds:
        r, ran = run_seed(args.env, seed, args.timesteps, args.threads, args.eval_episodes)
        if settings is not None and ran != settings:
            raise RuntimeError(f"seed {seed} ran other settings than seed {args.seeds[0]}")
        settings = settings or ran
        results.append(r)
        print(
            f"RecurrentPPO {args.env} seed {seed}: {r['frames']} frames, train {r['train_seconds']:.1f} s, "
            f"deterministic eval over {r['eval_episodes']} episodes {r['eval_mean']:.2f} +- {r['eval_std']:.2f} "
            f"[{r['eval_min']:.2f}, {r['eval_max']:.2f}], seed total {r['seed_seconds']:.1f} s",
            flush=True,
        )

    import torch

    out = {
        "peer": "sb3-contrib RecurrentPPO through rl_zoo3.train --algo ppo_lstm",
        "env": args.env,
        "settings": settings,
        "torch_threads": torch.get_num_threads(),
        "versions": versions("rl_zoo3", "sb3_contrib", "stable_baselines3", "torch", "gymnasium", "numpy"),
        "seeds": results,
    }
    out["process_seconds"] = time.perf_counter() - process_start
    print(f"process total {out['process_seconds']:.1f} s", flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(out, f, indent=2)
            f.write("\n")


if __name__ == "__main__":
    main()
