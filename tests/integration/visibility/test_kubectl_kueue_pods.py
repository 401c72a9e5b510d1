"""``kubectl kueue why pod/NAME``: a queued pod's Workload is its own, a group member's is its group's.

The cluster of integrations/test_pods.py (the pod integration on, research's 2 GPUs): a 2-GPU pod runs, a
group of two 1-GPU pods waits for it.
"""

from __future__ import annotations

import pytest

from tests.fakeapi import FakeApiServer
from tests.integration.integrations.test_pods import HANG, cluster, member, pod, started
from tests.integration.visibility.test_kubectl_kueue import kueue, needs_script

__all__ = ["cluster", "needs_script"]


@pytest.mark.usefixtures("needs_script")
async def test_why_a_pod_and_a_pod_of_a_group_wait(cluster: FakeApiServer) -> None:
    await cluster.create(pod("first", 2), admit=True)
    await cluster.wait_for(started(cluster, "first"), timeout=HANG)
    for index in range(2):
        await cluster.create(member(f"g-{index}", "pair", 2), admit=True)
    await cluster.wait_for(lambda: cluster.get("workloads", "pair", "team") is not None, timeout=HANG)
    config = cluster.kubeconfig_path(namespace="team")

    code, out, err = await kueue(config, "why", "pod/g-1")
    assert code == 0, err
    assert out.startswith("Pod team/g-1 -> Workload pair\nStatus:          PENDING\n")
    code, out, err = await kueue(config, "why", "po/first")
    assert code == 0, err
    assert out.splitlines()[0].startswith("Pod team/first -> Workload pod-first-")
    assert "Status:          ADMITTED" in out
