"""``kueue-webhook simulate`` with several clusters: a MultiKueue manager dispatching to workers, each
worker's quota a ClusterQueue named like its MultiKueueCluster (manifests/examples/multikueue.yaml)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kueue_webhook.cli import main

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "manifests" / "examples" / "multikueue.yaml"


def workloads(capsys: pytest.CaptureFixture[str], *args: str) -> dict[str, dict[str, object]]:
    assert main(["simulate", "-o", "json", *args, str(EXAMPLE)]) == 0
    report = json.loads(capsys.readouterr().out)
    return {str(w["name"]).rsplit("-", 1)[0]: w for w in report["workloads"]}


def test_workloads_run_on_the_preferred_worker_with_room_and_wait_with_manager_quota(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Kueue's all-at-once dispatcher: every worker is asked, the first to admit runs it."""
    now = workloads(capsys)
    assert {name: w.get("worker") for name, w in now.items()} == {
        "job-train-1": "east",
        "job-train-2": "east",
        "job-train-3": "west",
        "job-train-4": None,
    }
    waiting = now["job-train-4"]
    assert waiting["admitted"] is False and waiting["reservedIn"] == "team-a"
    assert waiting["pending"] == {
        "reason": "MultiKueue",
        "message": "quota reserved in team-a; waiting for a worker cluster to admit it (east, west)",
        "position": None,
    }


def test_a_waiting_workload_runs_where_room_is_freed_first(capsys: pytest.CaptureFixture[str]) -> None:
    later = workloads(capsys, "--at", "15m")
    assert later["job-train-4"]["worker"] == "east" and later["job-train-4"]["admitted"] is True
    assert all(later[f"job-train-{i}"]["finished"] for i in (1, 2, 3))


def test_the_text_report_has_a_worker_column_and_each_workers_usage(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["simulate", str(EXAMPLE)]) == 0
    out = capsys.readouterr().out
    assert "NAME                QUEUE    RESERVED IN   WORKER   ADMITTED   FINISHED" in out
    assert "ClusterQueue east (BestEffortFIFO)" in out and "ClusterQueue west (BestEffortFIFO)" in out
    manager = out.split("ClusterQueue team-a (BestEffortFIFO)\n", 1)[1].splitlines()
    assert manager[0].split() == [
        "admitted",
        "3",
        "pending",
        "0",
        "finished",
        "0",
    ]  # the 4th waits for a worker
    assert "default   cpu        8 / 8" in manager[2]  # while holding the manager's quota


@pytest.mark.parametrize(
    ("drop", "error"),
    [
        (
            "kind: ClusterQueue\nmetadata: {name: west}",
            "MultiKueueCluster west: simulate needs a ClusterQueue named west",
        ),
        (
            "kind: MultiKueueConfig\nmetadata",
            "AdmissionCheck multikueue: MultiKueueConfig workers is not in the input",
        ),
    ],
    ids=["worker-without-quota", "config-missing"],
)
def test_an_incomplete_layout_is_refused_with_what_is_missing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], drop: str, error: str
) -> None:
    documents = EXAMPLE.read_text().split("\n---\n")
    kept = [doc for doc in documents if drop not in doc]
    assert len(kept) == len(documents) - 1
    layout = tmp_path / "layout.yaml"
    layout.write_text("\n---\n".join(kept))
    assert main(["simulate", str(layout)]) == 2
    assert error in capsys.readouterr().err
