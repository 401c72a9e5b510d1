"""What of a Workload is checked against quota (Kueue's ``resources`` configuration): resources named with an
excluded prefix are not counted at all (``excludeResourcePrefixes``), and with ``quotaCheckStrategy:
IgnoreUndeclared`` a resource the ClusterQueue does not cover is left out of its check instead of keeping
the Workload out (Kueue's flavorassigner ``IgnoreUndeclaredResources``)."""

from __future__ import annotations

from kueue_webhook.core.scheduler import Admit, SchedulerState

from .builders import cluster_queue, last_wait, run_until_quiet, state_with, workload

WIDGET = "example.com/widget"


def state() -> SchedulerState:
    return state_with(cluster_queue("cq", {"default": {"cpu": 4}}), local_queues={"lq": "cq"})


def admitted(s: SchedulerState) -> list[Admit]:
    return [d for d in run_until_quiet(s) if isinstance(d, Admit)]


def test_by_default_a_resource_the_queue_does_not_cover_keeps_the_workload_out() -> None:
    s = state()
    s.upsert_workload(workload("w", {"cpu": "1", WIDGET: "1"}))
    decisions = run_until_quiet(s)
    assert not [d for d in decisions if isinstance(d, Admit)]
    assert last_wait(decisions, "ns/w").message == (
        f"couldn't assign flavors to pod set main: resource {WIDGET} unavailable in ClusterQueue"
    )


def test_an_excluded_prefix_is_not_counted() -> None:
    s = state()
    assert s.configure_quota_check(excluded=("example.com/",))
    s.upsert_workload(workload("w", {"cpu": "1", WIDGET: "1"}))
    (admit,) = admitted(s)
    assert admit.admission.to_dict()["podSetAssignments"][0]["resourceUsage"] == {"cpu": "1"}


def test_ignore_undeclared_checks_only_what_the_queue_covers() -> None:
    s = state()
    assert not s.configure_quota_check(ignore_undeclared=True)  # nothing to read again for this one
    s.upsert_workload(workload("w", {"cpu": "1", WIDGET: "1"}))
    (admit,) = admitted(s)
    assignment = admit.admission.to_dict()["podSetAssignments"][0]
    assert assignment["flavors"] == {"cpu": "default"}
    assert s.ledger.usage("cq") == {("default", "cpu"): 10**9}


def test_a_pending_workload_read_again_after_the_prefixes_change_gets_in() -> None:
    s = state()
    pending = workload("w", {"cpu": "1", WIDGET: "1"})
    s.upsert_workload(pending)
    assert not admitted(s)
    assert s.configure_quota_check(excluded=("example.com/",))
    s.upsert_workload(pending)  # as the controller feeds every Workload again
    assert [d.workload for d in admitted(s)] == ["ns/w"]
