"""The tracking backends: a real ``mlflow server`` on 127.0.0.1 read back with MlflowClient, and W&B in
offline mode (whose service is a process of its own) read back from its run files; each through a real
``rlcli train`` (and ``rlcli tune``, and ``--resume``), in the integration layer. In this process: a
backend whose package is missing is refused before training, and the loggers over stand-in clients
(which run each server keeps, what waits for the rows, the environment left as it was)."""

from __future__ import annotations

import csv
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from types import SimpleNamespace

import pytest

from rlcli.config.logger import LoggerConfig
from support.cli import assert_bad_input
from support.processes import free_port
from support.run_folders import only_run_folder

TRAIN = ("ppo_cartpole", "--set", "collector.total_frames=2048", "-q")


@pytest.fixture
def mlflow_server(tmp_path):
    """A real tracking server with its own SQLite store and artifact folder (in ``tmp_path/server``, so that
    a run's working folder holds only what the run writes there); yields its URI and process."""
    pytest.importorskip("mlflow")
    server = tmp_path / "server"
    server.mkdir()
    port = free_port()
    exe = shutil.which("mlflow") or str(Path(sys.executable).parent / "mlflow")
    proc = subprocess.Popen(
        [
            exe,
            "server",
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "--workers",
            "1",
            "--backend-store-uri",
            f"sqlite:///{server / 'mlflow.db'}",
            "--default-artifact-root",
            (server / "artifacts").as_uri(),
        ],
        cwd=server,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    uri = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while True:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                break
        except OSError:
            assert proc.poll() is None and time.monotonic() < deadline, "mlflow server did not start"
            time.sleep(0.2)
    yield uri, proc
    stop_server(proc)


def stop_server(proc: subprocess.Popen) -> None:
    """Kill the server and its workers (its own process group)."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    proc.wait()


@pytest.mark.integration
def test_mlflow_receives_params_rows_and_files_and_a_lost_server_loses_nothing(rlcli, tmp_path, mlflow_server):
    from mlflow import MlflowClient

    uri, server = mlflow_server
    backends = ("--set", 'logger.backends=["csv", "mlflow"]', "--set", f"logger.mlflow_uri={json.dumps(uri)}")
    result = rlcli("train", *TRAIN, *backends, "--out", tmp_path / "runs", cwd=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    run_dir = only_run_folder(tmp_path / "runs")
    client = MlflowClient(tracking_uri=uri)
    run = client.get_run((run_dir / "mlflow-run-id").read_text().strip())
    assert run.info.status == "FINISHED" and run.info.run_name == run_dir.name
    # Params are the resolved config's dotted keys.
    assert run.data.params["algo.gamma"] == "0.98" and run.data.params["env.id"] == "CartPole-v1"
    assert run.data.params["collector.total_frames"] == "2048"
    # One metric point per row, stepped by frames, with the row's value.
    rows = list(csv.DictReader((run_dir / "metrics.csv").open()))
    history = client.get_metric_history(run.info.run_id, "loss/policy")
    assert [m.step for m in history] == [int(r["frames"]) for r in rows]
    assert [m.value for m in history] == pytest.approx([float(r["loss/policy"]) for r in rows])
    artifacts = {a.path for a in client.list_artifacts(run.info.run_id)}
    assert {"run.json", "config.toml", "final.pt"} <= artifacts
    # The server goes away: the next run warns once and its folder is complete.
    stop_server(server)
    again = rlcli("train", *TRAIN, *backends, "--out", tmp_path / "again", cwd=tmp_path, timeout=180)
    output = again.stdout + again.stderr
    assert again.returncode == 0, output
    assert output.count("warning:") == 1 and "mlflow backend stopped" in output and "Traceback" not in output
    folder = only_run_folder(tmp_path / "again")
    assert json.loads((folder / "run.json").read_text())["status"] == "completed"
    assert (folder / "final.pt").is_file() and len(list(csv.DictReader((folder / "metrics.csv").open()))) == 4


@pytest.mark.integration
def test_an_mlflow_run_writes_nothing_in_its_working_folder(rlcli, tmp_path, mlflow_server):
    # The run's rows are waited for on its own client: MLflow's module-level flush would open its default
    # store (./mlflow.db) in the working folder, whatever the run's tracking URI.
    uri, _ = mlflow_server
    work = tmp_path / "work"
    work.mkdir()
    backends = ("--set", 'logger.backends=["csv", "mlflow"]', "--set", f"logger.mlflow_uri={json.dumps(uri)}")
    result = rlcli("train", *TRAIN, *backends, "--out", tmp_path / "runs", cwd=work)
    assert result.returncode == 0, result.stdout + result.stderr
    assert not (work / "mlflow.db").exists() and list(work.iterdir()) == []


@pytest.mark.integration
def test_tune_nests_each_trial_under_its_study_run(rlcli, tmp_path, mlflow_server):
    pytest.importorskip("optuna")
    from mlflow import MlflowClient

    uri, _ = mlflow_server
    space = tmp_path / "space.toml"
    space.write_text('[space]\n"optim.lr" = { low = 1e-4, high = 1e-2, log = true }\n', encoding="utf-8")
    result = rlcli(
        "tune",
        "ppo_cartpole",
        "--space",
        space,
        "--trials",
        "2",
        "--jobs",
        "2",
        "--out",
        tmp_path / "tune",
        "--set",
        "collector.total_frames=1024",
        "--set",
        'logger.backends=["csv", "mlflow"]',
        "--set",
        f"logger.mlflow_uri={json.dumps(uri)}",
        cwd=tmp_path,
        timeout=240,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    client = MlflowClient(tracking_uri=uri)
    experiment = client.get_experiment_by_name("rlcli")
    runs = client.search_runs([experiment.experiment_id])
    (parent,) = [r for r in runs if r.data.tags.get("rlcli.study") == "ppo_cartpole"]
    children = [r for r in runs if r.data.tags.get("mlflow.parentRunId") == parent.info.run_id]
    assert sorted(r.info.run_name for r in children) == ["trial-0000-seed0", "trial-0001-seed0"] or all(
        r.info.run_name.startswith(("trial-0000-seed0-", "trial-0001-seed0-")) for r in children
    )
    assert len(children) == 2 and "best/value" in client.get_run(parent.info.run_id).data.metrics


@pytest.mark.integration
def test_wandb_offline_keeps_config_rows_and_summary_in_the_run_folder(rlcli, tmp_path, monkeypatch):
    pytest.importorskip("wandb")
    monkeypatch.setenv("WANDB_MODE", "offline")
    monkeypatch.setenv("WANDB_SILENT", "true")
    result = rlcli(
        "train",
        *TRAIN,
        "--set",
        'logger.backends=["csv", "wandb"]',
        "--set",
        "logger.log_model=true",
        "--out",
        tmp_path / "runs",
        cwd=tmp_path,
        timeout=180,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    run_dir = only_run_folder(tmp_path / "runs")
    (path,) = wandb_files(run_dir)
    records = read_wandb(path)
    rows = list(csv.DictReader((run_dir / "metrics.csv").open()))
    history = [r for r in records if r["kind"] == "history"]
    assert [h["_step"] for h in history] == [int(r["frames"]) for r in rows]
    assert [h["loss/policy"] for h in history] == pytest.approx([float(r["loss/policy"]) for r in rows])
    # The resolved config, nested as in config.toml.
    config = next(r for r in records if r["kind"] == "run")
    assert config["algo"]["gamma"] == 0.98 and config["env"]["id"] == "CartPole-v1"
    summary = {k: v for r in records if r["kind"] == "summary" for k, v in r.items()}
    assert summary["status"] == "completed" and summary["frames"] == 2048
    assert any(r["kind"] == "artifact" for r in records)


@pytest.mark.integration
def test_wandb_resume_continues_the_run_its_folder_started(rlcli, tmp_path, monkeypatch):
    pytest.importorskip("wandb")
    monkeypatch.setenv("WANDB_MODE", "offline")
    monkeypatch.setenv("WANDB_SILENT", "true")
    backends = ("--set", 'logger.backends=["csv", "wandb"]')
    first = rlcli("train", *TRAIN, *backends, "--out", tmp_path / "runs", cwd=tmp_path, timeout=180)
    assert first.returncode == 0, first.stdout + first.stderr
    run_dir = only_run_folder(tmp_path / "runs")
    resumed = rlcli(
        "train", "--resume", run_dir, "--set", "collector.total_frames=4096", "-q", cwd=tmp_path, timeout=180
    )
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    run_id = (run_dir / "wandb-run-id").read_text(encoding="utf-8").strip()
    parts = [read_wandb(path) for path in wandb_files(run_dir)]
    # Two parts of one W&B run (offline, each part is a file of its own), the second's rows after the first's.
    assert len(parts) == 2
    assert [next(r["run_id"] for r in part if r["kind"] == "run") for part in parts] == [run_id, run_id]
    steps = [[r["_step"] for r in part if r["kind"] == "history"] for part in parts]
    assert steps[0][-1] == 2048 and steps[1][0] > 2048 and steps[1][-1] == 4096


def wandb_records(path: Path) -> list[bytes]:
    """The records of a ``.wandb`` file: a 7-byte header, then 32 KiB blocks of records, each a 7-byte
    header (crc32, length, type: 1 whole, 2 first, 3 middle, 4 last part) and its bytes; a block's tail
    shorter than a header is padding."""
    import struct

    data = path.read_bytes()
    assert data[:4] == b":W&B", data[:7]
    records, pending, offset, block = [], b"", 7, 32768
    while offset + 7 <= len(data):
        left = block - offset % block
        if left < 7:
            offset += left
            continue
        _crc, length, kind = struct.unpack("<IHB", data[offset : offset + 7])
        chunk = data[offset + 7 : offset + 7 + length]
        offset += 7 + length
        if kind == 0 and length == 0:
            continue
        pending = chunk if kind in (1, 2) else pending + chunk
        if kind in (1, 4):
            records.append(pending)
            pending = b""
    return records


def wandb_files(run_dir: Path) -> list[Path]:
    """The ``.wandb`` files of the offline runs under ``run_dir/wandb``, oldest first."""
    return sorted(run_dir.glob("wandb/offline-run-*/run-*.wandb"))


def read_wandb(path: Path) -> list[dict]:
    """The records of the offline run file ``path``, decoded with wandb's own protobuf messages."""
    from wandb.proto import wandb_internal_pb2

    out = []
    for data in wandb_records(path):
        record = wandb_internal_pb2.Record()
        record.ParseFromString(data)
        kind = record.WhichOneof("record_type")
        if kind == "history":
            out.append(
                {
                    "kind": "history",
                    **{i.key or "/".join(i.nested_key): json.loads(i.value_json) for i in record.history.item},
                }
            )
        elif kind == "summary":
            out.append(
                {
                    "kind": "summary",
                    **{i.key or "/".join(i.nested_key): json.loads(i.value_json) for i in record.summary.update},
                }
            )
        elif kind == "artifact":
            out.append({"kind": "artifact", "name": record.artifact.name})
        elif kind == "run":
            config = {i.key: json.loads(i.value_json) for i in record.run.config.update}
            out.append({"kind": "run", "run_id": record.run.run_id, **config})
    return out


@pytest.mark.parametrize("backend", ["wandb", "mlflow"])
def test_a_backend_whose_package_is_missing_is_refused_before_training(cli, tmp_path, monkeypatch, backend):
    # rlcli imports the package when it checks the backends (rlcli.loggers.check_backends): a None in
    # sys.modules makes that import fail as a missing package does.
    monkeypatch.setitem(sys.modules, backend, None)
    result = cli(
        "train", *TRAIN, "--set", f'logger.backends=["csv", "{backend}"]', "--out", tmp_path / "runs", cwd=tmp_path
    )
    assert_bad_input(result, "logger.backends", f"pip install 'rlcli[{backend}]'")
    assert not (tmp_path / "runs").exists()


class StandInWandb:
    """The ``wandb`` module as the W&B logger uses it: records the keywords of each ``init``."""

    def __init__(self) -> None:
        self.inits: list[dict] = []

    def init(self, **settings) -> SimpleNamespace:
        self.inits.append(settings)
        run_id = settings["id"] or f"new-{len(self.inits)}"
        return SimpleNamespace(id=run_id, log=lambda row, step: None, summary={}, finish=lambda exit_code: None)


def test_wandb_continues_its_run_only_when_the_run_resumes(tmp_path, monkeypatch):
    from rlcli.loggers.tracking import WandbLogger

    wandb = StandInWandb()
    monkeypatch.setitem(sys.modules, "wandb", wandb)
    settings = LoggerConfig(backends=["csv", "wandb"])
    WandbLogger(tmp_path, settings, {}, None).close()
    WandbLogger(tmp_path, settings, {}, 2048).close()
    # A new run in a folder that held one (and a resumed run of a folder that never had W&B) starts its own.
    WandbLogger(tmp_path, settings, {}, None).close()
    (tmp_path / "wandb-run-id").unlink()
    WandbLogger(tmp_path, settings, {}, 4096).close()
    assert [(i["id"], i["resume"]) for i in wandb.inits] == [
        (None, None),
        ("new-1", "must"),
        (None, None),
        (None, None),
    ]
    assert (tmp_path / "wandb-run-id").read_text(encoding="utf-8") == "new-4\n"


class StandInMlflowClient:
    """An MlflowClient as the MLflow logger uses it: records the runs started, reopened and ended, and
    counts the waits on the rows sent in the background."""

    def __init__(self) -> None:
        self.created, self.reopened, self.ended, self.waits = 0, [], [], 0

    def get_experiment_by_name(self, name: str) -> SimpleNamespace:
        return SimpleNamespace(experiment_id="1")

    def create_run(self, experiment: str, *, run_name: str, tags: dict) -> SimpleNamespace:
        self.created += 1
        return SimpleNamespace(info=SimpleNamespace(run_id=f"run-{self.created}"))

    def update_run(self, run_id: str, *, status: str) -> None:
        self.reopened.append(run_id)

    def log_batch(self, run_id: str, *, metrics=(), params=(), synchronous: bool | None = None):
        return SimpleNamespace(wait=self.waited) if synchronous is False else None

    def waited(self) -> None:
        self.waits += 1

    def log_artifact(self, run_id: str, path: str) -> None:
        pass

    def set_terminated(self, run_id: str, status: str) -> None:
        self.ended.append((run_id, status))


def test_mlflow_waits_for_its_own_rows_and_leaves_the_environment_as_it_was(tmp_path, monkeypatch):
    mlflow = pytest.importorskip("mlflow")
    from rlcli.loggers.tracking import MLflowLogger

    client = StandInMlflowClient()
    monkeypatch.setattr(mlflow, "MlflowClient", lambda tracking_uri: client)
    monkeypatch.delenv("MLFLOW_HTTP_REQUEST_MAX_RETRIES", raising=False)
    # The user's own setting is kept.
    monkeypatch.setenv("MLFLOW_HTTP_REQUEST_TIMEOUT", "30")
    before = dict(os.environ)
    settings = LoggerConfig(backends=["csv", "mlflow"])
    logger = MLflowLogger(tmp_path, settings, {"algo": {"gamma": 0.98}}, None)
    # While the run is open, a server that goes away fails a call in seconds.
    assert os.environ["MLFLOW_HTTP_REQUEST_MAX_RETRIES"] == "1" and os.environ["MLFLOW_HTTP_REQUEST_TIMEOUT"] == "30"
    for frames in (512, 1024):
        logger.write({"iteration": frames // 512, "frames": frames, "loss/policy": 0.5})
    logger.flush()
    assert client.waits == 2
    logger.write({"iteration": 3, "frames": 1536, "loss/policy": 0.5})
    logger.close()
    assert client.waits == 3 and client.ended == [("run-1", "FAILED")]
    assert dict(os.environ) == before
    # A resumed run reopens the run its folder started.
    MLflowLogger(tmp_path, settings, {}, 1536).close()
    assert client.created == 1 and client.reopened == ["run-1"]
