"""rlcli's gSDE distributions beside Stable-Baselines3's ``StateDependentNoiseDistribution`` on the same numbers.

The peer check of issue 44 (gSDE). For each algorithm that takes gSDE (PPO, A2C and TRPO: the plain
state-dependent Gaussian; SAC and TQC: the tanh-squashed one) and each of ``full_std`` and ``use_expln`` on and
off, an rlcli run is built on Pendulum-v1 with ``use_sde = true``, its gSDE ``log_std`` set to random values (of
both signs, so that expln takes both branches), and a batch of random observations goes through its policy.
SB3's distribution (``squash_output`` and ``learn_features`` as SB3's PPO and SAC policies set them) is then given
rlcli's ``log_std``, the same latent features and mean, and the same noise matrices (one per row, and one for the
whole batch), and the two are compared:

- the sampled actions (``mean + z @ E``, squashed for SAC and TQC) and the deterministic ones;
- the log-probability of the same actions (each side's own log-probability of its own sample);
- the entropy (the plain Gaussian only: SB3 has none for the squashed one).

The bar is 1e-5. It runs in a scratch venv with SB3 2.9.2 and sb3-contrib 2.9.2
(``benchmarks/peers/requirements-rlzoo.txt``) and rlcli's runtime dependencies, rlcli's ``src`` on the path:

    python3.11 -m venv /tmp/peer-sb3gsde
    /tmp/peer-sb3gsde/bin/pip install torch==2.13.0 stable-baselines3==2.9.2 sb3-contrib==2.9.2 gymnasium==1.4.0
    /tmp/peer-sb3gsde/bin/pip install tensordict pydantic typer rich
    PYTHONPATH=src /tmp/peer-sb3gsde/bin/python benchmarks/peers/sb3_gsde_parity.py --json /tmp/sb3_gsde_parity.json

Prints one line per comparison, then writes (and prints) one JSON object: the versions, every configuration run
and each comparison's largest absolute difference.
"""

from __future__ import annotations

import argparse
import itertools
import json
from importlib.metadata import version
from pathlib import Path

import torch
import torch.nn.functional as F
from stable_baselines3.common.distributions import StateDependentNoiseDistribution

from rlcli.config.load import validate_data
from rlcli.models.gsde import CLIP_MEAN, StateDependentNoise
from rlcli.run import build_run

BAR = 1e-5
BATCH = 64
ON_POLICY = ("ppo", "a2c", "trpo")
SQUASHED = ("sac", "tqc")


def rlcli_agent(algo: str, *, full_std: bool, use_expln: bool):
    """The agent of an rlcli run of ``algo`` with gSDE on Pendulum-v1 (two hidden layers of 64, tanh)."""
    data = {
        "run": {"device": "cpu", "seed": 0},
        "env": {"id": "Pendulum-v1", "num_envs": 1, "vectorization": "sync"},
        "network": {"hidden_sizes": [64, 64], "activation": "tanh", "full_std": full_std, "use_expln": use_expln},
        "algo": {"name": algo, "use_sde": True},
        "collector": {"frames_per_batch": 64, "total_frames": 1000},
    }
    return build_run(validate_data(data)).algo.agent


def sb3_distribution(noise: StateDependentNoise, *, squashed: bool, full_std: bool, use_expln: bool):
    """SB3's distribution for ``noise``'s sizes, as its PPO (learn_features off) or SAC (squashed, on) builds it."""
    dist = StateDependentNoiseDistribution(
        noise.actions, full_std=full_std, use_expln=use_expln, squash_output=squashed, learn_features=squashed
    )
    dist.proba_distribution_net(latent_dim=noise.latent, log_std_init=0.0)
    return dist


def set_matrices(dist: StateDependentNoiseDistribution, matrices: torch.Tensor) -> None:
    """Hold ``matrices`` ([B, L, A]: one per row; [L, A]: one for every row) as SB3's ``sample_weights`` would."""
    if matrices.dim() == 3:
        dist.exploration_mat, dist.exploration_matrices = matrices[0], matrices
    else:
        dist.exploration_mat, dist.exploration_matrices = matrices, matrices[None]


def compare(figures: dict, name: str, ours: torch.Tensor, theirs: torch.Tensor) -> None:
    diff = float((ours.detach().double() - theirs.detach().double()).abs().max())
    figures[name] = diff
    flag = "ok" if diff <= BAR else "OVER THE BAR"
    print(f"{name:60s} max |rlcli - sb3| {diff:.3e}  (size {float(theirs.abs().max()):.3e})  {flag}")


def on_policy(algo: str, full_std: bool, use_expln: bool, generator: torch.Generator, figures: dict) -> None:
    agent = rlcli_agent(algo, full_std=full_std, use_expln=use_expln)
    head = agent.policy
    with torch.no_grad():
        head.noise.log_std.copy_(torch.randn(head.noise.log_std.shape, generator=generator) * 0.8)
    obs = torch.randn(BATCH, 3, generator=generator)
    dist = head(agent.encoder(agent.obs_norm(obs)))
    sb3 = sb3_distribution(head.noise, squashed=False, full_std=full_std, use_expln=use_expln)
    sb3.proba_distribution(dist.normal.loc, head.noise.log_std, dist.latent)
    tag = f"{algo} full_std={full_std} use_expln={use_expln}"
    for count in (BATCH, None):
        matrices = head.noise.draw(generator, count).detach()
        set_matrices(sb3, matrices)
        ours, theirs = head.perturb(dist, matrices), sb3.sample()
        rows = "per-env matrices" if count else "one matrix"
        compare(figures, f"{tag} action ({rows})", ours, theirs)
        compare(figures, f"{tag} log_prob ({rows})", head.log_prob(dist, ours), sb3.log_prob(theirs))
    compare(figures, f"{tag} entropy", head.entropy(dist), sb3.entropy())
    compare(figures, f"{tag} deterministic action", head.mode(dist), sb3.mode())


def squashed(algo: str, full_std: bool, use_expln: bool, generator: torch.Generator, figures: dict) -> None:
    agent = rlcli_agent(algo, full_std=full_std, use_expln=use_expln)
    actor = agent.actor
    noise = actor.noise
    with torch.no_grad():
        noise.log_std.copy_(torch.randn(noise.log_std.shape, generator=generator) * 0.8)
    obs = agent.obs_norm(torch.randn(BATCH, 3, generator=generator))
    latent = actor.encoder(obs)
    for layer in actor.net[:-1]:
        latent = layer(latent)
    mean = F.hardtanh(actor.net[-1](latent), -CLIP_MEAN, CLIP_MEAN)
    sb3 = sb3_distribution(noise, squashed=True, full_std=full_std, use_expln=use_expln)
    sb3.proba_distribution(mean, noise.log_std, latent)
    half = actor.rescale.half_range
    tag = f"{algo} full_std={full_std} use_expln={use_expln}"
    for count in (BATCH, None):
        matrices = noise.draw(generator, count).detach()
        set_matrices(sb3, matrices)
        action, log_prob = actor(obs, noise=matrices)
        theirs = sb3.sample()
        rows = "per-env matrices" if count else "one matrix"
        compare(figures, f"{tag} squashed action ({rows})", action / half, theirs)
        compare(figures, f"{tag} squashed log_prob ({rows})", log_prob, sb3.log_prob(theirs))
    compare(figures, f"{tag} deterministic action", actor(obs, deterministic=True)[0] / half, sb3.mode())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--json", type=Path, default=None, help="write the figures here as well")
    args = parser.parse_args()
    torch.set_num_threads(1)
    generator = torch.Generator().manual_seed(0)
    figures: dict[str, float] = {}
    ran = []
    for algo, full_std, use_expln in itertools.product((*ON_POLICY, *SQUASHED), (True, False), (False, True)):
        run = on_policy if algo in ON_POLICY else squashed
        run(algo, full_std, use_expln, generator, figures)
        ran.append({"algo": algo, "full_std": full_std, "use_expln": use_expln, "squashed": algo in SQUASHED})
    worst = max(figures.values())
    report = {
        "stable_baselines3": version("stable-baselines3"),
        "sb3_contrib": version("sb3-contrib"),
        "torch": torch.__version__,
        "env": "Pendulum-v1",
        "batch": BATCH,
        "bar": BAR,
        "configurations": ran,
        "max_abs_diff": figures,
        "worst": worst,
        "within_bar": worst <= BAR,
    }
    text = json.dumps(report, indent=1)
    if args.json is not None:
        args.json.write_text(text + "\n")
    print(json.dumps({"worst": worst, "within_bar": worst <= BAR, "comparisons": len(figures)}))


if __name__ == "__main__":
    main()
