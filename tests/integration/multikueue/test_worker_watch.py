"""The workers' copies are watched, not polled: on fake clusters, one manager and two workers.

Nothing here lists the workers again on a timer (no retry pace short enough to matter, no garbage
collection), so what reaches the manager after a change in a worker came through the watch of that worker.
"""

from __future__ import annotations

import pytest

from kueue_webhook.control.multikueue.dispatcher import DispatchSettings
from tests.integration.multikueue.test_dispatch import (
    Clusters,
    check,
    clusters,
    gpu_job,
    manager_workload,
)
from tests.support.fake_cluster import is_true

__all__ = ["clusters"]  # the fixture, shared with the dispatch tests

#: no timer that could bring a worker's change back: only the watch can
WATCH_ONLY = DispatchSettings(worker_lost_timeout=60.0, gc_interval=0, longest_wait=3600.0)


def job_lists(clusters: Clusters, worker: str) -> list[str]:
    """The manager's list requests of its Job copies in the worker (by the origin label; watches are not
    lists, and the worker's own controller lists every Job, without a selector)."""
    return [
        r
        for r in clusters.workers[worker].requests
        if r.startswith("GET /apis/batch/v1/jobs?")
        and "watch=" not in r
        and "labelSelector=kueue.x-k8s.io/multikueue-origin%3Dmultikueue" in r
    ]


@pytest.mark.parametrize("clusters", [WATCH_ONLY], indirect=True, ids=["watch-only"])
async def test_a_job_finishing_in_its_worker_reaches_the_manager_through_the_watch(
    clusters: Clusters,
) -> None:
    # 6 GPUs: only worker-b (8) admits the copy
    await clusters.manager.create(gpu_job("train", 6), admit=True)
    await clusters.manager.wait_for(
        lambda: check(manager_workload(clusters, "train")).get("state") == "Ready"
    )
    worker_b = clusters.workers["worker-b"]
    await worker_b.wait_for(
        lambda: (worker_b.get("jobs", "train", "ml") or {}).get("spec", {}).get("suspend") is False
    )
    await clusters.manager.wait_for(
        lambda: (clusters.manager.get("jobs", "train", "ml") or {}).get("status", {}).get("active") == 1
    )
    await worker_b.complete_job("ml", "train")
    await clusters.manager.wait_for(lambda: is_true(manager_workload(clusters, "train"), "Finished"))
    mirrored = clusters.manager.get("jobs", "train", "ml")
    assert mirrored is not None and mirrored["status"]["succeeded"] == 1
    # one list of the worker's Jobs, by this manager's origin label, when the watch started; none since
    assert len(job_lists(clusters, "worker-b")) == 1


@pytest.mark.parametrize("clusters", [WATCH_ONLY], indirect=True, ids=["watch-only"])
async def test_a_lost_worker_is_no_longer_watched_and_is_watched_again_once_back(clusters: Clusters) -> None:
    watches = clusters.controller.controller.multikueue.watches
    await clusters.manager.wait_for(lambda: set(watches.watched()) == {"worker-a", "worker-b"})
    clusters.stand_in.lose("worker-b")
    assert set(watches.watched()) == {"worker-a"}
    clusters.stand_in.restore("worker-b")
    assert set(watches.watched()) == {"worker-a", "worker-b"}
    # the restored worker is watched: a Job run there after its return finishes on the manager (nothing
    # else brings a worker's change back here)
    await clusters.manager.create(gpu_job("train", 6), admit=True)
    await clusters.manager.wait_for(
        lambda: check(manager_workload(clusters, "train")).get("state") == "Ready"
    )
    worker_b = clusters.workers["worker-b"]
    await worker_b.wait_for(
        lambda: (worker_b.get("jobs", "train", "ml") or {}).get("spec", {}).get("suspend") is False
    )
    await worker_b.complete_job("ml", "train")
    await clusters.manager.wait_for(lambda: is_true(manager_workload(clusters, "train"), "Finished"))
