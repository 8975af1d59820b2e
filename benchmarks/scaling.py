"""Data-parallel scaling: env frames/s of ``rlcli train PRESET --nproc N`` against ``--nproc 1``,
measured in one session, runs interleaved, medians reported; and the frames and seconds to the
preset's return threshold with ``--nproc N``.

Each run is the real command (``rlcli train``, ranks started through torchrun's launcher), with
one torch thread per rank. Frames/s is ``run.json``'s (frames over training wall time, the
start-up of each process left out); the all-reduce share is ``update.all_reduce`` over the
whole iteration, from the same file.

    python benchmarks/scaling.py --preset ppo_cartpole --nproc 2 --frames 81920 --repeat 3
    python benchmarks/scaling.py --preset ppo_cartpole --nproc 2 --solve
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path


def train(preset: str, nproc: int, out: Path, *settings: str) -> dict:
    """One ``rlcli train`` run; returns its run.json."""
    args = [sys.executable, "-m", "rlcli", "train", preset, "--out", str(out), "-q", "--nproc", str(nproc)]
    for setting in settings:
        args += ["--set", setting]
    result = subprocess.run(args, capture_output=True, text=True)
    if result.returncode != 0:
        sys.exit(f"rlcli train failed ({result.returncode}):\n{result.stderr[-2000:]}")
    (folder,) = out.iterdir()
    return json.loads((folder / "run.json").read_text(encoding="utf-8"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--preset", default="ppo_cartpole")
    parser.add_argument("--nproc", type=int, default=2)
    parser.add_argument("--frames", type=int, default=81920, help="frames per throughput run")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--parallel", choices=["replicate", "split"], default="replicate")
    parser.add_argument(
        "--solve",
        action="store_true",
        help="also train the whole preset with --nproc N to its stop_at_return, and report frames and seconds to it",
    )
    opts = parser.parse_args()
    fps: dict[int, list[float]] = {1: [], opts.nproc: []}
    shares: list[float] = []
    settings = (
        f"collector.total_frames={opts.frames}",
        "run.stop_at_return=1e9",
        "checkpoint.every_frames=0",
        f'run.parallel="{opts.parallel}"',
    )
    with tempfile.TemporaryDirectory() as tmp:
        for repeat in range(opts.repeat):
            # Interleaved, so that drift of a shared machine falls on both alike.
            for nproc in (1, opts.nproc):
                info = train(opts.preset, nproc, Path(tmp) / f"{nproc}-{repeat}", *settings)
                fps[nproc].append(info["fps"])
                if nproc > 1:
                    shares.append(info["timing"].get("update.all_reduce", {}).get("share", 0.0))
                print(f"repeat {repeat}: --nproc {nproc}: {info['fps']:,.0f} frames/s", flush=True)
        one, many = statistics.median(fps[1]), statistics.median(fps[opts.nproc])
        share = statistics.median(shares)
        print(f"{opts.preset}, {opts.frames:,} frames, run.parallel={opts.parallel}, medians of {opts.repeat}:")
        print(
            f"  --nproc 1: {one:,.0f} frames/s   --nproc {opts.nproc}: {many:,.0f} frames/s   "
            f"ratio {many / one:.2f}x   all-reduce share of the iteration {share:.1%}"
        )
        # What the ranks' own work allows: the same run with the all-reduce waits taken out.
        print(f"  ratio with the all-reduce time taken out of the iteration: {many / (1 - share) / one:.2f}x")
        if opts.solve:
            info = train(opts.preset, opts.nproc, Path(tmp) / "solve", f'run.parallel="{opts.parallel}"')
            print(
                f"  --nproc {opts.nproc} to the threshold: status {info['status']}, "
                f"{info['solved_at_frames'] or 'not reached'} frames, {info['solved_at_seconds']} s "
                f"(best return {info['best_return']:.1f}, {info['frames']:,} frames trained)"
            )


if __name__ == "__main__":
    main()
