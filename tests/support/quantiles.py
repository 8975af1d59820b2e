"""The quantile Huber loss written as a loop, for the tests of QR-DQN and TQC."""


def plain_quantile_huber(current: list[float], target: list[float]) -> list[list[float]]:
    """rho^1_tau(u) of Dabney et al. (2018), eq. 10, pair by pair."""
    n = len(current)
    out = []
    for i, theta in enumerate(current):
        tau = (2 * i + 1) / (2 * n)
        row = []
        for y in target:
            u = y - theta
            huber = 0.5 * u * u if abs(u) <= 1 else abs(u) - 0.5
            row.append(abs(tau - (1.0 if u < 0 else 0.0)) * huber)
        out.append(row)
    return out
