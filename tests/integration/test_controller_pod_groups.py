"""Pod groups on the fake API server with the shipped webhook configurations, as Kueue's pod integration
treats them (pkg/controller/jobs/pod): the pod webhook refuses malformed group metadata, a group with more
pods than its total count loses the excess ones, and the pods of an evicted group are marked with the
``TerminationTarget`` condition before they are deleted."""

from __future__ import annotations

import pytest

from tests.fakeapi import FakeApiServer
from tests.fakeapi.errors import ApiError
from tests.integration.test_controller_pods import (  # the cluster fixture and its helpers
    HANG,
    cluster,
    member,
    pod,
    started,
)

__all__ = ["cluster"]

GROUP = "kueue.x-k8s.io/pod-group-name"
TOTAL = "kueue.x-k8s.io/pod-group-total-count"
DENIED = 'admission webhook "vpod.kueue.x-k8s.io" denied the request: '


async def test_the_pod_webhook_refuses_half_declared_groups(cluster: FakeApiServer) -> None:
    with pytest.raises(ApiError) as missing_count:
        await cluster.create(pod("lonely", 1, labels={GROUP: "g"}), admit=True)
    assert missing_count.value.code == 403
    assert missing_count.value.message.startswith(f"{DENIED}metadata.annotations[{TOTAL}]: Required value: ")

    with pytest.raises(ApiError) as missing_name:
        await cluster.create(pod("counted", 1, annotations={TOTAL: "2"}), admit=True)
    assert missing_name.value.message.startswith(f"{DENIED}metadata.labels[{GROUP}]: Required value: ")

    with pytest.raises(ApiError) as zero:
        await cluster.create(member("empty", "g", 0), admit=True)
    assert zero.value.message.startswith(f'{DENIED}metadata.annotations[{TOTAL}]: Invalid value: "0": ')
    assert cluster.list("pods", "team") == []


async def test_a_group_name_cannot_change_but_the_total_count_can(cluster: FakeApiServer) -> None:
    await cluster.create(member("g-0", "trio", 3), admit=True)
    with pytest.raises(ApiError) as renamed:
        await cluster.patch(
            "pods", "g-0", {"metadata": {"labels": {GROUP: "other"}}}, namespace="team", admit=True
        )
    assert (
        renamed.value.message
        == f'{DENIED}metadata.labels[{GROUP}]: Invalid value: "other": field is immutable'
    )
    resized = await cluster.patch(
        "pods", "g-0", {"metadata": {"annotations": {TOTAL: "1"}}}, namespace="team", admit=True
    )
    assert resized["metadata"]["annotations"][TOTAL] == "1"
    # a group of one now: its Workload is made and the pod admitted
    await cluster.wait_for(started(cluster, "g-0"), timeout=HANG)
