"""The tracking backends: a real ``mlflow server`` on 127.0.0.1 read back with MlflowClient, and W&B in
offline mode (whose service is a process of its own) read back from its run files; each through a real
``rlcli train`` (and ``rlcli tune``), in the integration layer. A backend whose package is missing is
refused in this process, before training.

Each real command runs in the test's tmp_path: MLflow writes its default local store (``mlflow.db``)
in the working folder when rlcli flushes its background logging, whatever the run's tracking URI."""

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

import pytest

from conftest import assert_bad_input

TRAIN = ("ppo_cartpole", "--set", "collector.total_frames=2048", "-q")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture
def mlflow_server(tmp_path):
    """A real tracking server with its own SQLite store and artifact folder; yields its URI and process."""
    pytest.importorskip("mlflow")
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
            f"sqlite:///{tmp_path / 'mlflow.db'}",
            "--default-artifact-root",
            (tmp_path / "artifacts").as_uri(),
        ],
        cwd=tmp_path,
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


def run_folder(out: Path) -> Path:
    (found,) = [p for p in out.iterdir() if p.is_dir()]
    return found


@pytest.mark.integration
def test_mlflow_receives_params_rows_and_files_and_a_lost_server_loses_nothing(rlcli, tmp_path, mlflow_server):
    from mlflow import MlflowClient

    uri, server = mlflow_server
    backends = ("--set", 'logger.backends=["csv", "mlflow"]', "--set", f"logger.mlflow_uri={json.dumps(uri)}")
    result = rlcli("train", *TRAIN, *backends, "--out", tmp_path / "runs", cwd=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    run_dir = run_folder(tmp_path / "runs")
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
    folder = run_folder(tmp_path / "again")
    assert json.loads((folder / "run.json").read_text())["status"] == "completed"
    assert (folder / "final.pt").is_file() and len(list(csv.DictReader((folder / "metrics.csv").open()))) == 4


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
    run_dir = run_folder(tmp_path / "runs")
    records = read_wandb(run_dir)
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


def read_wandb(run_dir: Path) -> list[dict]:
    """The offline run under ``run_dir/wandb``, decoded with wandb's own protobuf messages."""
    from wandb.proto import wandb_internal_pb2

    (path,) = run_dir.glob("wandb/offline-run-*/run-*.wandb")
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
            out.append({"kind": "run", **{i.key: json.loads(i.value_json) for i in record.run.config.update}})
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
