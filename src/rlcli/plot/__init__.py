"""Learning curves of run folders (``rlcli plot``): :mod:`rlcli.plot.runs` reads ``metrics.csv``
and groups the seeds of one experiment; :mod:`rlcli.plot.draw` draws each group's median with a
band and the time per iteration of each.

Reading and grouping need numpy only; drawing imports matplotlib (the ``plot`` extra).
"""

from rlcli.plot.draw import (
    BANDS,
    DPI,
    FIGSIZE_IN,
    FONT_SIZE,
    INSTALL_HINT,
    LEGEND_ROW_IN,
    RETURN,
    X_COLUMNS,
    X_LABELS,
    PlotResult,
    check_matplotlib,
    figure_size,
    plot_runs,
    y_label,
)
from rlcli.plot.runs import (
    Curve,
    Group,
    RunData,
    expand_run_dirs,
    group_curve,
    group_runs,
    mean_phase_ms,
    read_metrics,
    read_run,
)

__all__ = [
    "BANDS",
    "DPI",
    "FIGSIZE_IN",
    "FONT_SIZE",
    "INSTALL_HINT",
    "LEGEND_ROW_IN",
    "RETURN",
    "X_COLUMNS",
    "X_LABELS",
    "Curve",
    "Group",
    "PlotResult",
    "RunData",
    "check_matplotlib",
    "expand_run_dirs",
    "figure_size",
    "group_curve",
    "group_runs",
    "mean_phase_ms",
    "plot_runs",
    "read_metrics",
    "read_run",
    "y_label",
]
