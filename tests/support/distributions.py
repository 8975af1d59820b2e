"""Whether two sets of sampled actions come from one distribution: a policy's exported file against its
eager policy, compared by the two-sample Kolmogorov-Smirnov test."""

from __future__ import annotations

import numpy as np
import torch

SAMPLES = 2000
KS_LIMIT = 2.23 * (2 / SAMPLES) ** 0.5
"""Two samples of SAMPLES draws from one distribution are this far apart in Kolmogorov-Smirnov distance with
probability 1e-4 (c(alpha) = sqrt(-ln(alpha / 2) / 2) = 2.23)."""


def ks_distance(a: np.ndarray, b: np.ndarray) -> float:
    """The two-sample Kolmogorov-Smirnov statistic: the largest gap between the two empirical CDFs."""
    points = np.concatenate([a, b])
    below_a = np.searchsorted(np.sort(a), points, side="right") / len(a)
    below_b = np.searchsorted(np.sort(b), points, side="right") / len(b)
    return float(np.abs(below_a - below_b).max())


def assert_same_distribution(played: torch.Tensor, eager: torch.Tensor, rows: int) -> None:
    """``played`` and ``eager`` ([rows * SAMPLES, *action], each observation's draws together) draw every
    action component of every observation from one distribution (KS test at alpha 1e-4), and do draw."""
    played = played.reshape(rows, SAMPLES, -1).double().numpy()
    eager = eager.reshape(rows, SAMPLES, -1).double().numpy()
    varied = False
    for row in range(rows):
        for part in range(played.shape[-1]):
            gap = ks_distance(played[row, :, part], eager[row, :, part])
            assert gap <= KS_LIMIT, f"observation {row}, action component {part}: KS distance {gap:.3f}"
            varied = varied or len(np.unique(played[row, :, part])) > 1
    assert varied, "the file drew one action for every draw of every observation"
