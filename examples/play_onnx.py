"""Play a policy that `rlcli export` wrote as ONNX, with numpy, gymnasium and onnxruntime only (no torch,
no rlcli): the file takes raw observations and returns the env's actions, and says in its metadata which
env it was trained on and what its inputs are.

    pip install numpy gymnasium onnxruntime
    python play_onnx.py runs/sac_pendulum-20250101-120000/policy.onnx --episodes 3 --seed 0

Prints one JSON line per episode: {"episode": i, "seed": s, "return": r, "length": n}.
"""

from __future__ import annotations

import argparse
import json

import gymnasium as gym
import numpy as np
import onnxruntime

# The numpy dtype of each ONNX input type the exported files use.
DTYPES = {
    "tensor(float)": np.float32,
    "tensor(double)": np.float64,
    "tensor(uint8)": np.uint8,
    "tensor(int64)": np.int64,
    "tensor(bool)": np.bool_,
}


class Policy:
    """One env's policy: call it on an observation (and the env's info) to get the env's action."""

    def __init__(self, path: str):
        self.session = onnxruntime.InferenceSession(path, providers=["CPUExecutionProvider"])
        self.metadata = json.loads(self.session.get_modelmeta().custom_metadata_map["rlcli"])
        self.dtypes = {entry.name: DTYPES[entry.type] for entry in self.session.get_inputs()}
        shape = self.metadata.get("memory_shape")
        # A policy with memory starts each episode from zeros, with first = True.
        self.memory = None if shape is None else np.zeros([1, *shape], np.float32)
        self.first = True

    def reset(self) -> None:
        self.first = True

    def __call__(self, observation, info: dict):
        feeds = {}
        for name in self.metadata["inputs"]:
            if name == "obs":
                value = observation
            elif name.startswith("obs."):
                value = observation[name.removeprefix("obs.")]
            elif name == "action_mask":
                # From info (Taxi's), else from a Dict observation's own key.
                value = info["action_mask"] if "action_mask" in info else observation["action_mask"]
            elif name == "memory":
                value = self.memory[0]
            else:  # "first"
                value = self.first
            feeds[name] = np.asarray(value, dtype=self.dtypes[name])[None]  # a batch of one
        outputs = self.session.run(None, feeds)
        if self.memory is not None:
            self.memory = outputs[1]
        self.first = False
        action = outputs[0][0]
        return int(action) if action.ndim == 0 and action.dtype == np.int64 else action


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("policy", help="an .onnx file of rlcli export")
    parser.add_argument("--episodes", type=int, default=1)
    parser.add_argument("--seed", type=int, default=0, help="the first episode's reset seed (then seed + 1, ...)")
    args = parser.parse_args()
    policy = Policy(args.policy)
    env = gym.make(policy.metadata["env"])
    for episode in range(args.episodes):
        observation, info = env.reset(seed=args.seed + episode)
        policy.reset()
        total, length, done = 0.0, 0, False
        while not done:
            observation, reward, terminated, truncated, info = env.step(policy(observation, info))
            total, length, done = total + float(reward), length + 1, terminated or truncated
        print(json.dumps({"episode": episode, "seed": args.seed + episode, "return": total, "length": length}))
    env.close()


if __name__ == "__main__":
    main()
