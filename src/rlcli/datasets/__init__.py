"""Offline data: Minari datasets found by id or path (:mod:`~rlcli.datasets.find`), read into
preallocated tensors (:mod:`~rlcli.datasets.load`, in the layout of :mod:`~rlcli.datasets.dataset`),
the :class:`~rlcli.datasets.source.DatasetSource` that feeds an offline run's loop in place of
the collector, and datasets written by rlcli: played by a trained policy or read from a run's replay
(:mod:`~rlcli.datasets.recording`, ``rlcli collect``) and made from the recipes of the offline presets
(:mod:`~rlcli.datasets.make`, ``rlcli datasets make``)."""

from rlcli.datasets.dataset import Dataset, dataset_bytes
from rlcli.datasets.find import EXTRA, DatasetNotFound, datasets_root, import_minari, local_ids, resolve
from rlcli.datasets.load import DatasetFile, check_env, check_memory, load_dataset, open_dataset, stand_in
from rlcli.datasets.source import DatasetSource

__all__ = [
    "EXTRA",
    "Dataset",
    "DatasetFile",
    "DatasetNotFound",
    "DatasetSource",
    "check_env",
    "check_memory",
    "dataset_bytes",
    "datasets_root",
    "import_minari",
    "load_dataset",
    "local_ids",
    "open_dataset",
    "resolve",
    "stand_in",
]
