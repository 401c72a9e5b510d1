"""Pod groups on a real API server, as Kueue's pod integration treats them: the pod webhook's refusals of
malformed group metadata as kubectl prints them, a pod beyond the group's count deleted as excess, and the
running pods of a preempted group marked ``TerminationTarget`` through ``pods/status`` before they are
deleted (the test holds them with a finalizer of its own to see both)."""

from __future__ import annotations

import json

import pytest

from tests.e2e.cluster import KUBECONFIG, NO_CLUSTER, Cluster, condition, until
from tests.e2e.conftest import with_controller
from tests.e2e.test_pods_e2e import CONTROLLER, create_pod, gated, namespace, pod, report_phase

pytestmark = [pytest.mark.skipif(not KUBECONFIG, reason=NO_CLUSTER), with_controller(CONTROLLER)]
__all__ = ["namespace"]

GROUP = "kueue.x-k8s.io/pod-group-name"
TOTAL = "kueue.x-k8s.io/pod-group-total-count"
DENIED = 'admission webhook "vpod.kueue.x-k8s.io" denied the request: '
HOLD = "e2e.kueue-webhook/hold"


def apply_pod(cluster: Cluster, ns: str, name: str, labels: str, annotations: str, cpu: str = "100m") -> str:
    """kubectl's stderr for a pod it could not create ('' when created)."""
    manifest = f"""
apiVersion: v1
kind: Pod
metadata:
  name: {name}
  namespace: {ns}
  labels: {{kueue.x-k8s.io/queue-name: q{labels}}}
  annotations: {annotations}
spec:
  restartPolicy: Never
  containers: [{{name: c, image: busybox, resources: {{requests: {{cpu: {cpu}}}}}}}]
"""
    result = cluster.kubectl("apply", "-f", "-", input=manifest, check=False)
    return result.stderr if result.returncode else ""


def release_hold(cluster: Cluster, ns: str, name: str) -> None:
    """Take the test's finalizer off, and only it (the controller may be editing the list meanwhile)."""
    for _ in range(5):
        found = cluster.kubectl("-n", ns, "get", "pod", name, "-o", "json", check=False)
        if found.returncode != 0:
            return
        finalizers = json.loads(found.stdout)["metadata"].get("finalizers") or []
        if HOLD not in finalizers:
            return
        index = finalizers.index(HOLD)
        ops = [
            {"op": "test", "path": f"/metadata/finalizers/{index}", "value": HOLD},
            {"op": "remove", "path": f"/metadata/finalizers/{index}"},
        ]
        cluster.kubectl("-n", ns, "patch", "pod", name, "--type=json", "-p", json.dumps(ops), check=False)


def test_malformed_group_metadata_is_refused_with_kueues_field_paths(namespace: tuple[Cluster, str]) -> None:
    cluster, ns = namespace
    no_count = apply_pod(cluster, ns, "no-count", f", {GROUP}: g", "{}")
    assert f"{DENIED}metadata.annotations[{TOTAL}]: Required value: " in no_count, no_count
    no_name = apply_pod(cluster, ns, "no-name", "", f'{{{TOTAL}: "2"}}')
    assert f"{DENIED}metadata.labels[{GROUP}]: Required value: " in no_name, no_name
    zero = apply_pod(cluster, ns, "zero", f", {GROUP}: g", f'{{{TOTAL}: "0"}}')
    assert f'{DENIED}metadata.annotations[{TOTAL}]: Invalid value: "0": ' in zero, zero
    words = apply_pod(cluster, ns, "words", f", {GROUP}: g", f'{{{TOTAL}: "two"}}')
    assert 'Invalid value: "two": strconv.Atoi: parsing "two": invalid syntax' in words, words
    assert not cluster.items("pods", "-n", ns)

    assert apply_pod(cluster, ns, "member", f", {GROUP}: trio", f'{{{TOTAL}: "3"}}') == ""
    renamed = cluster.kubectl(
        "-n", ns, "label", "pod", "member", f"{GROUP}=other", "--overwrite", check=False
    )
    assert renamed.returncode != 0
    assert f'{DENIED}metadata.labels[{GROUP}]: Invalid value: "other": field is immutable' in renamed.stderr
    cluster.kubectl(
        "-n", ns, "annotate", "pod", "member", f"{TOTAL}=1", "--overwrite"
    )  # the count may change
    until(lambda: not gated(pod(cluster, ns, "member")), "the group of one to be admitted")


def test_a_pod_beyond_the_groups_count_is_deleted_as_excess(namespace: tuple[Cluster, str]) -> None:
    cluster, ns = namespace
    group, total = f", {GROUP}: pair", f'{{{TOTAL}: "2"}}'
    for name in ("pair-0", "pair-1"):
        create_pod(cluster, ns, name, cpu="250m", labels=group, annotations=total)
    until(
        lambda: not gated(pod(cluster, ns, "pair-0")) and not gated(pod(cluster, ns, "pair-1")),
        "the group to be admitted",
    )
    # the same role as the others (an extra pod of a role the Workload lacks is not counted against it)
    assert apply_pod(cluster, ns, "pair-2", group, total, cpu="250m") == ""
    until(
        lambda: cluster.kubectl("-n", ns, "get", "pod", "pair-2", check=False).returncode != 0,
        "the excess pod to be deleted",
    )
    events = cluster.items("events", "-n", ns, "--field-selector", "involvedObject.name=pair-2")
    assert any(e.get("reason") == "ExcessPodDeleted" for e in events), events
    assert not gated(pod(cluster, ns, "pair-0")) and not gated(pod(cluster, ns, "pair-1"))


def test_a_preempted_groups_pods_are_marked_termination_target_then_deleted(
    namespace: tuple[Cluster, str],
) -> None:
    cluster, ns = namespace
    group, total = f", {GROUP}: pair", f'{{{TOTAL}: "2"}}'
    names = ("pair-0", "pair-1")
    for name in names:
        create_pod(cluster, ns, name, cpu="500m", labels=group, annotations=total)
    until(lambda: not any(gated(pod(cluster, ns, n)) for n in names), "the group to be admitted")
    for name in names:
        report_phase(cluster, ns, name, "Running")
        add = [{"op": "add", "path": "/metadata/finalizers/-", "value": HOLD}]
        cluster.kubectl("-n", ns, "patch", "pod", name, "--type=json", "-p", json.dumps(add))
    try:
        create_pod(cluster, ns, "urgent", labels=f", kueue.x-k8s.io/priority-class: {ns}")
        for name in names:
            until(
                lambda n=name: bool(pod(cluster, ns, n)["metadata"].get("deletionTimestamp")),
                f"{name} to be deleted",
            )
            marked = condition(pod(cluster, ns, name), "TerminationTarget")
            assert (marked.get("status"), marked.get("reason")) == ("True", "WorkloadEvictedDueToPreempted")
            evicted = condition(cluster.get("workload", "pair", "-n", ns), "Evicted")
            assert marked.get("message") == evicted.get("message") and marked.get("lastTransitionTime")
    finally:
        for name in names:
            release_hold(cluster, ns, name)
    until(lambda: not gated(pod(cluster, ns, "urgent")), "the urgent pod to start")
