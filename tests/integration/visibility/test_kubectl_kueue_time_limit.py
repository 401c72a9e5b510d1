"""A Job's ``kueue.x-k8s.io/max-exec-time-seconds`` label reaches its Workload (Kueue's jobframework
``NewWorkload``), so ``kubectl kueue why`` can tell when a waiting Job starts from the running Jobs' limits;
relabelling a waiting Job updates its Workload, and removing the label removes the limit."""

from __future__ import annotations

import asyncio
import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from tests.fakeapi import FakeApiServer
from tests.integration.visibility.test_kubectl_kueue import kueue, needs_script, pending, serve_visibility
from tests.support.replica import certificates, replica
from tests.support.research import HANG, QUOTA, gpu_job, running, workloads_of

__all__ = ["needs_script"]

JSON = dict[str, Any]
LABEL = "kueue.x-k8s.io/max-exec-time-seconds"


def limited_job(name: str, seconds: int) -> JSON:
    job = gpu_job(name)
    job["metadata"]["labels"][LABEL] = str(seconds)
    return job


def limit_of(fake_api: FakeApiServer, job: str) -> object:
    found = workloads_of(fake_api, job)
    return (found[0].get("spec") or {}).get("maximumExecutionTimeSeconds", "absent") if found else None


@pytest.mark.usefixtures("needs_script")
async def test_why_estimates_from_the_jobs_time_limit_labels(fake_api: FakeApiServer, tmp_path: Path) -> None:
    await fake_api.apply_manifests(QUOTA)
    config = fake_api.kubeconfig_path(namespace="team-a")
    tls = certificates(tmp_path / "tls")
    async with replica(fake_api.kubeconfig_path(), tls=tls) as serving:
        await asyncio.wait_for(serving.controller.leading.wait(), HANG)
        await serve_visibility(fake_api, serving.port, tls)
        await fake_api.create(limited_job("short", 600))
        await fake_api.create(limited_job("long", 3600))
        await fake_api.wait_for(
            lambda: running(fake_api, "short") and running(fake_api, "long"), timeout=HANG
        )
        await fake_api.create(limited_job("next", 60))
        await fake_api.wait_for(lambda: pending(fake_api, "next"), timeout=HANG)
        assert [limit_of(fake_api, j) for j in ("short", "long", "next")] == [600, 3600, 60]

        code, out, err = await kueue(config, "why", "job/next", "-o", "json")
        assert code == 0, err
        start = json.loads(out)["estimatedStart"]
        assert start["unknown"] is None
        assert start["replayed"] == {"admitted": 2, "pending": 1, "withoutMaximumExecutionTime": 0}
        moment = datetime.fromisoformat(start["at"].replace("Z", "+00:00"))
        assert 500 < (moment - datetime.now(UTC)).total_seconds() <= 601

        # still suspended: the label may change, and the Workload follows
        await fake_api.patch("jobs", "next", {"metadata": {"labels": {LABEL: "120"}}}, namespace="team-a")
        await fake_api.wait_for(lambda: limit_of(fake_api, "next") == 120, timeout=HANG)
        await fake_api.patch("jobs", "next", {"metadata": {"labels": {LABEL: None}}}, namespace="team-a")
        await fake_api.wait_for(lambda: limit_of(fake_api, "next") == "absent", timeout=HANG)
        assert pending(fake_api, "next")
