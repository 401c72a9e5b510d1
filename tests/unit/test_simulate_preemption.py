"""``kueue-webhook simulate`` on the preemption example: who was preempted, by whom and why, in the text
and JSON reports, and what happens to the preempted Jobs afterwards."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kueue_webhook.cli import main

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "manifests" / "examples" / "preemption.yaml"


def test_text_report_lists_each_preemption_with_its_reason(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["simulate", str(EXAMPLE)]) == 0
    out = capsys.readouterr().out
    assert (
        "  10m  nlp/job-nlp-sweep-1f25f (nlp) preempted by vision/job-vision-batch-a8f8a (vision): "
        "InCohortReclamation"
    ) in out
    assert (
        "  20m  vision/job-vision-batch-a8f8a (vision) preempted by vision/job-vision-deadline-34b99 "
        "(vision): InClusterQueue"
    ) in out
    assert "admitted 1   pending 1   finished 0   preempted 1" in out


def test_json_report_carries_kueues_messages(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["simulate", "-o", "json", str(EXAMPLE)]) == 0
    report = json.loads(capsys.readouterr().out)
    first, second = report["preemptions"]
    assert (first["at"], first["workload"], first["preemptor"], first["reason"]) == (
        600.0,
        "nlp/job-nlp-sweep-1f25f",
        "vision/job-vision-batch-a8f8a",
        "InCohortReclamation",
    )
    assert first["message"].startswith("Preempted to accommodate a workload (UID: simulated-")
    assert first["message"].endswith(
        "due to reclamation within the cohort; preemptor path: /research/vision; "
        "preemptee path: /research/nlp"
    )
    assert (second["clusterQueue"], second["preemptingClusterQueue"]) == ("vision", "vision")
    assert {q["name"]: q["preempted"] for q in report["clusterQueues"]} == {"vision": 1, "nlp": 1}


def test_preempted_jobs_run_again_from_the_start_once_room_returns(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # the deadline Job (30m from 20m) finishes at 50m and vision-batch gets in again: it runs its whole
    # hour from there (to 1h50m), not the 50 minutes it had left
    def rows_at(at: str) -> dict[str, dict[str, object]]:
        assert main(["simulate", "-o", "json", "--at", at, str(EXAMPLE)]) == 0
        report = json.loads(capsys.readouterr().out)
        assert len(report["preemptions"]) == 2  # nothing preempted twice, no back-and-forth
        return {w["name"].rsplit("-", 1)[0]: w for w in report["workloads"]}

    early = rows_at("1h45m")
    assert early["job-vision-deadline"]["finished"]
    assert early["job-vision-batch"]["admitted"] and not early["job-vision-batch"]["finished"]
    assert rows_at("1h51m")["job-vision-batch"]["finished"]


FAIR = ROOT / "manifests" / "examples" / "fair-sharing.yaml"


def test_fair_sharing_example_takes_from_both_borrowers_and_reports_shares(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["simulate", "--at", "5s", str(FAIR)]) == 0
    assert "weighted share 167" in capsys.readouterr().out  # 2 of 12 lendable CPUs borrowed
    assert main(["simulate", "-o", "json", str(FAIR)]) == 0
    report = json.loads(capsys.readouterr().out)
    first = [p["workload"].split("/")[0] for p in report["preemptions"] if p["at"] == 10.0]
    assert sorted(first) == ["team-a", "team-b"]
    # team-c reclaims what it lent: within its nominal quota, no share comparison (Kueue v0.17+)
    assert {p["reason"] for p in report["preemptions"]} == {"InCohortReclamation"}


def test_without_the_configmap_classical_preemption_takes_the_newest_first(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    docs = FAIR.read_text().split("\n---\n")
    classical = tmp_path / "classical.yaml"
    classical.write_text("\n---\n".join(d for d in docs if "kind: ConfigMap" not in d))
    assert main(["simulate", "-o", "json", str(classical)]) == 0
    report = json.loads(capsys.readouterr().out)
    first = [p["workload"].split("/")[0] for p in report["preemptions"] if p["at"] == 10.0]
    assert first == ["team-b", "team-b"]
    assert {p["reason"] for p in report["preemptions"]} == {"InCohortReclamation"}


def test_manual_approval_example_loads_and_checks_are_assumed_to_pass(
    capsys: pytest.CaptureFixture[str],
) -> None:
    example = ROOT / "manifests" / "examples" / "manual-approval.yaml"
    assert main(["simulate", "-o", "json", str(example)]) == 0
    report = json.loads(capsys.readouterr().out)
    assert [w["admitted"] for w in report["workloads"]] == [True]
    assert report["clusterQueues"][0]["usage"][0]["used"] == "16"
