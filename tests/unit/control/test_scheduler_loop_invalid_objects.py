"""An object the core cannot read (a ClusterQueue with a 5000-digit quota) is skipped with one log line naming
it and saying why; the loop is not interrupted."""

from __future__ import annotations

import logging

import pytest

from kueue_webhook.control.kube.kinds import CLUSTER_QUEUES
from tests.unit.control.scheduler_loops import feed, new_loop
from tests.unit.control.small_cluster import cluster


def test_an_invalid_cluster_queue_is_logged_by_name_and_skipped(caplog: pytest.LogCaptureFixture) -> None:
    loop, store = new_loop()
    queue = next(obj for kind, obj in cluster(0) if kind is CLUSTER_QUEUES)
    queue["spec"]["resourceGroups"][0]["flavors"][0]["resources"][0]["nominalQuota"] = "1" * 5000
    feed(loop, store, CLUSTER_QUEUES, queue)
    [record] = [r for r in caplog.records if r.getMessage() == "object ignored: invalid"]
    assert record.levelno == logging.WARNING
    assert (record.__dict__["kind"], record.__dict__["object"]) == ("ClusterQueue", "cq")
    assert "must not be longer than 128 characters" in record.__dict__["errors"][0]
    assert loop.state.cluster_queue("cq") is None
