"""Fingerprints of short training runs: the md5 of each run's metric rows, clock columns cut.

A refactor that claims "no behaviour change" runs this before and after and compares the
two files: every shipped preset (and a few variants that take other code paths: prioritized,
memmap and 1-step replay, OU noise, evaluation) trains for a few iterations on the CPU with
seed 1, and the rows of ``metrics.csv`` without the columns that read a clock (``time/...``,
``rollout/fps``...) must be byte-identical. Presets that ``RUNS`` does not name get a budget
derived from their file (:func:`short`); offline presets read a small dataset of random
episodes on their env written here, since their own datasets are made by ``rlcli datasets make``
or downloaded.

    python benchmarks/identity.py --json /tmp/identity-before.json
    python benchmarks/identity.py --compare /tmp/identity-before.json
"""

from __future__ import annotations

import argparse
import csv
import hashlib
import io
import json
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

import tomllib

ROOT = Path(__file__).resolve().parents[1]

# Preset (or name=preset) -> the --set overrides that make it short but past its warm-up.
RUNS: dict[str, tuple[str, ...]] = {
    "ppo_cartpole": ("collector.total_frames=2048",),
    "a2c_cartpole": ("collector.total_frames=800",),
    "ppo_pendulum": ("collector.total_frames=8192", "algo.epochs=2"),
    "dqn_cartpole": ("collector.total_frames=2048",),
    "sac_pendulum": ("collector.total_frames=400",),
    "redq_pendulum": ("collector.total_frames=160",),
    "td3_pendulum": ("collector.total_frames=1200",),
    "ddpg_pendulum": ("collector.total_frames=1200",),
    "sac_halfcheetah": ("collector.total_frames=200", "algo.learning_starts=100"),
    "dqn_prioritized=dqn_cartpole": (
        "collector.total_frames=2048",
        "algo.replay.prioritized=true",
        'algo.replay.storage="memmap"',
    ),
    "sac_nstep_prioritized=sac_pendulum": (
        "collector.total_frames=400",
        "algo.n_step=3",
        "algo.replay.prioritized=true",
    ),
    "td3_ou=ddpg_pendulum": ("collector.total_frames=1200", 'algo.noise="ou"'),
    "ppo_eval=ppo_cartpole": ("collector.total_frames=2048", "eval.every_frames=1024", "eval.episodes=3"),
}
# Columns that read a clock: the phase timings, wall time and throughput.
CLOCK = ("time/", "wall_time")


def short(preset: Path, dataset: Callable[[str], str]) -> tuple[str, ...]:
    """Overrides that make ``preset`` train a few iterations past its warm-up: two batches on-policy,
    a warm-up of two batches and four more off-policy, 40 gradient steps offline."""
    cfg = tomllib.loads(preset.read_text(encoding="utf-8"))
    if "data" in cfg:
        return (
            f"data.dataset={json.dumps(dataset(cfg['env']['id']))}",
            "data.total_steps=40",
            "data.steps_per_iteration=20",
            "eval.final_episodes=2",
        )
    batch = cfg["collector"]["frames_per_batch"]
    if "learning_starts" in cfg["algo"]:
        return (f"algo.learning_starts={2 * batch}", f"collector.total_frames={6 * batch}")
    return (f"collector.total_frames={2 * batch}",)


def every_run(dataset: Callable[[str], str]) -> dict[str, tuple[str, ...]]:
    """``RUNS``, then every other shipped preset with the overrides of :func:`short`."""
    runs = dict(RUNS)
    named = {name.partition("=")[2] or name for name in RUNS}
    for preset in sorted((ROOT / "presets").glob("*.toml")):
        if preset.stem not in named:
            runs[preset.stem] = short(preset, dataset)
    return runs


def clockless(metrics: Path) -> str:
    """The csv rows of ``metrics`` without the columns that depend on a clock."""
    with metrics.open(newline="", encoding="utf-8") as file:
        rows = list(csv.reader(file))
    keep = [i for i, name in enumerate(rows[0]) if not name.startswith(CLOCK) and "fps" not in name]
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    for row in rows:
        writer.writerow([row[i] for i in keep])
    return out.getvalue()


def fingerprint(name: str, overrides: tuple[str, ...], out: Path) -> dict[str, str]:
    label, _, preset = name.partition("=")
    preset = preset or label
    folder = out / label
    command = [
        sys.executable,
        "-m",
        "rlcli",
        "train",
        preset,
        "--seed",
        "1",
        "--device",
        "cpu",
        "--quiet",
        "--out",
        str(folder),
        *[arg for o in overrides for arg in ("--set", o)],
        "--set",
        "run.stop_at_return=1e9",
        "--set",
        "logger.interval=1",
    ]
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        return {"error": (done.stderr or done.stdout)[-2000:]}
    (metrics,) = folder.glob("*/metrics.csv")
    text = clockless(metrics)
    return {
        "md5": hashlib.md5(text.encode()).hexdigest(),
        "rows": str(text.count("\n") - 1),
        "columns": text.splitlines()[0],
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", type=Path, help="write the fingerprints here")
    parser.add_argument("--compare", type=Path, help="fingerprints from --json to compare against")
    parser.add_argument("--only", nargs="*", help="run only these names")
    args = parser.parse_args()
    results = {}
    with tempfile.TemporaryDirectory(prefix="rlcli-identity-") as tmp:
        from rlcli.datasets.recording.random_episodes import write_random_episodes

        def dataset(env_id: str) -> str:
            """The offline presets' data: 8 random episodes of 100 steps on their env, written on first use."""
            return write_random_episodes(env_id, episodes=8, max_steps=100, root=Path(tmp) / "datasets")

        for name, overrides in every_run(dataset).items():
            label = name.partition("=")[0]
            if args.only and label not in args.only:
                continue
            results[label] = fingerprint(name, overrides, Path(tmp))
            print(f"{label:24} {results[label].get('md5', 'ERROR')} rows={results[label].get('rows', '-')}", flush=True)
            if "error" in results[label]:
                print(results[label]["error"], file=sys.stderr)
    if args.json:
        args.json.write_text(json.dumps(results, indent=1) + "\n", encoding="utf-8")
    if args.compare:
        before = json.loads(args.compare.read_text(encoding="utf-8"))
        differ = [name for name in results if results[name].get("md5") != before.get(name, {}).get("md5")]
        for name in differ:
            print(f"DIFFERENT: {name}")
        print("identical" if not differ else f"{len(differ)} of {len(results)} differ")
        return 1 if differ else 0
    return 1 if any("error" in r for r in results.values()) else 0


if __name__ == "__main__":
    sys.exit(main())
