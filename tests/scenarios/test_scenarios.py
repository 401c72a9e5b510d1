"""Scenario tests: each ``*.yaml`` holds manifests and one ``expect:`` document, replayed by simulate.

The ``expect`` document lists what a user would see at ``at`` (default: the last arrival): which Jobs are
admitted (and, under ``counts``, with how many pods per pod set), which wait and with what reason and
message, which were preempted (by whom, with which Preempted reason and Evicted message), and the usage of
each ClusterQueue.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from kueue_webhook.simulate import Scenario, add_document, parse_duration, replay, report_json

HERE = Path(__file__).parent
SCENARIOS = sorted(HERE.glob("*.yaml"))


def load(path: Path) -> tuple[Scenario, dict[str, Any]]:
    scenario = Scenario()
    expect: dict[str, Any] | None = None
    for index, doc in enumerate(yaml.safe_load_all(path.read_text())):
        if isinstance(doc, dict) and "expect" in doc:
            expect = doc["expect"]
            continue
        add_document(scenario, doc, source=path.name, index=index)
    assert expect is not None, f"{path.name} has no expect document"
    return scenario, expect


def job_name(workload_name: str) -> str:
    """``job-train-01-1a2b3`` -> ``train-01`` (``trainingrun-llm-4c5d6`` -> ``llm``: any queued kind)."""
    return workload_name.split("-", 1)[1].rsplit("-", 1)[0]


@pytest.mark.parametrize("path", SCENARIOS, ids=[p.stem for p in SCENARIOS])
def test_scenario(path: Path) -> None:
    scenario, expect = load(path)
    at = parse_duration(expect["at"]) if "at" in expect else None
    report = report_json(replay(scenario, at=at), scenario)
    rows = {job_name(row["name"]): row for row in report["workloads"]}
    admitted = sorted(name for name, row in rows.items() if row["admitted"] and not row["finished"])
    assert admitted == sorted(expect.get("admitted", [])), "admitted Jobs"
    for name, counts in expect.get("counts", {}).items():  # pods admitted per pod set (partial admission)
        assert rows[name].get("podSetCounts") == counts, f"{name} admitted counts"
    if "finished" in expect:
        assert sorted(n for n, r in rows.items() if r["finished"]) == sorted(expect["finished"])
    pending = {name: row["pending"] for name, row in rows.items() if "pending" in row}
    assert sorted(pending) == sorted(expect.get("pending", {})), "pending Jobs"
    for name, want in expect.get("pending", {}).items():
        for field, value in want.items():
            assert pending[name][field] == value, f"{name}.{field}"
    preempted = {
        job_name(row["workload"].split("/", 1)[1]): {
            "by": job_name(row["preemptor"].split("/", 1)[1]),
            "reason": row["reason"],
            "message": row["message"],
        }
        for row in report["preemptions"]
    }
    assert sorted(preempted) == sorted(expect.get("preempted", {})), "preempted Jobs"
    for name, want in expect.get("preempted", {}).items():
        for field, value in want.items():
            assert preempted[name][field] == value, f"{name} preempted: {field}"
    queues = {queue["name"]: queue for queue in report["clusterQueues"]}
    for queue_name, usage in expect.get("usage", {}).items():
        got = {f"{u['flavor']}/{u['resource']}": u["used"] for u in queues[queue_name]["usage"]}
        assert {k: got[k] for k in usage} == {k: str(v) for k, v in usage.items()}, f"usage of {queue_name}"
