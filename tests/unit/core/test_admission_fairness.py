"""Admission fair sharing: in a ClusterQueue with ``admissionScope.admissionMode:
UsageBasedAdmissionFairSharing``, the Workloads of LocalQueues that used less go first (Kueue's
AdmissionFairSharing; the scheduler cases follow ``pkg/scheduler/scheduler_afs_test.go``, the arithmetic
``pkg/util/admissionfairsharing``)."""

from __future__ import annotations

from typing import Any

from kueue_webhook.api.config_model import AdmissionFairSharing
from kueue_webhook.api.objects import LocalQueue, parse_local_queue
from kueue_webhook.core.admission_fairness import decayed, scaled
from kueue_webhook.core.scheduler import Evict, SchedulerState

from .builders import admitted, cluster_queue, flavor, last_wait, run_until_quiet, workload

NANO = 10**9
USAGE_BASED = {"admissionMode": "UsageBasedAdmissionFairSharing"}
#: Kueue's test configuration: half-life 10 s, a sample every second
CONFIG = AdmissionFairSharing(usage_half_life_seconds=10.0, usage_sampling_interval_seconds=1.0)


def lq(name: str, *, consumed: dict[str, str] | None = None, weight: str | None = None) -> LocalQueue:
    body: dict[str, Any] = {
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"clusterQueue": "cq1"},
    }
    if weight is not None:
        body["spec"]["fairSharing"] = {"weight": weight}
    if consumed is not None:
        body["status"] = {
            "fairSharing": {
                "admissionFairSharingStatus": {
                    "consumedResources": consumed,
                    "lastUpdate": "2026-01-01T00:00:00Z",
                }
            }
        }
    parsed = parse_local_queue(body)
    assert isinstance(parsed, LocalQueue), parsed
    return parsed


def afs_state(
    *queues: LocalQueue, cpu: int = 8, config: AdmissionFairSharing | None = CONFIG, **spec: Any
) -> SchedulerState:
    state = SchedulerState()
    state.fairness.now = 1767225600.0  # 2026-01-01T00:00:00Z, when the statuses below were written
    state.upsert_namespace("default", {})
    state.upsert_resource_flavor(flavor("default"))
    state.configure_admission_fair_sharing(config)
    scope = spec.pop("admissionScope", USAGE_BASED)
    extra = {"admissionScope": scope} if scope is not None else {}
    state.upsert_cluster_queue(cluster_queue("cq1", {"default": {"cpu": cpu}}, **extra, **spec))
    for queue in queues:
        state.upsert_local_queue(queue)
    return state


def add(state: SchedulerState, name: str, cpu: int, queue: str, created: int) -> None:
    state.upsert_workload(
        workload(name, {"cpu": str(cpu)}, queue=queue, namespace="default", created=created)
    )


def cycle_and_confirm(state: SchedulerState) -> list[str]:
    """One cycle at a time, each admission written and seen before the next (Kueue's test runs one
    ``schedule`` per Workload and waits for its writes)."""
    out: list[str] = []
    while state.has_work():
        decisions = state.cycle()
        for key in admitted(decisions):
            state.confirm(key)
            out.append(key)
    return out


def test_admits_workload_from_less_active_localqueue() -> None:
    state = afs_state(lq("lq-a", consumed={"cpu": "8"}), lq("lq-b", consumed={"cpu": "2"}))
    add(state, "wl-a1", 8, "lq-a", created=0)
    add(state, "wl-b1", 8, "lq-b", created=1)
    decisions = state.cycle()
    assert admitted(decisions) == ["default/wl-b1"]
    state.confirm("default/wl-b1")
    decisions = run_until_quiet(state)
    assert last_wait(decisions, "default/wl-a1").message == (
        "couldn't assign flavors to pod set main: insufficient unused quota for cpu in flavor default, "
        "8 more needed"
    )


def test_without_admission_fair_sharing_the_older_workload_goes_first() -> None:
    """Kueue's "without AFS: classic admission decision ignores queue usage", both ways of being off: no
    ``admissionFairSharing`` in the configuration, or a ClusterQueue without the admission mode."""
    for state in (
        afs_state(lq("lq-a", consumed={"cpu": "8"}), lq("lq-b", consumed={"cpu": "2"}), config=None),
        afs_state(lq("lq-a", consumed={"cpu": "8"}), lq("lq-b", consumed={"cpu": "2"}), admissionScope=None),
        afs_state(
            lq("lq-a", consumed={"cpu": "8"}),
            lq("lq-b", consumed={"cpu": "2"}),
            admissionScope={"admissionMode": "NoAdmissionFairSharing"},
        ),
    ):
        add(state, "wl-a1", 8, "lq-a", created=0)
        add(state, "wl-b1", 8, "lq-b", created=1)
        assert admitted(state.cycle()) == ["default/wl-a1"]


def test_does_not_prioritize_a_zero_weight_localqueue() -> None:
    state = afs_state(lq("lq-a"), lq("lq-zero", weight="0"))
    add(state, "wl-zero", 8, "lq-zero", created=0)
    add(state, "wl-a1", 8, "lq-a", created=1)
    assert admitted(state.cycle()) == ["default/wl-a1"]


def test_admits_one_workload_from_each_localqueue_when_quota_is_limited() -> None:
    """Equal usage: the older Workload goes first, and its entry penalty (4 cpu times the alpha of one
    sampling interval, 1 - 0.5 ** 0.1) puts its LocalQueue behind the other for the next cycle."""
    state = afs_state(lq("lq-a", consumed={"cpu": "4"}), lq("lq-b", consumed={"cpu": "4"}))
    add(state, "wl-a1", 4, "lq-a", created=0)
    add(state, "wl-a2", 4, "lq-a", created=1)
    add(state, "wl-b1", 4, "lq-b", created=2)
    add(state, "wl-b2", 4, "lq-b", created=3)
    assert cycle_and_confirm(state) == ["default/wl-a1", "default/wl-b1"]


def test_equal_usage_orders_as_usual() -> None:
    state = afs_state(
        lq("lq-a", consumed={"cpu": "2"}),
        lq("lq-b", consumed={"cpu": "2"}),
        lq("lq-c", consumed={"cpu": "2"}),
    )
    add(state, "wl-a1", 4, "lq-a", created=0)
    add(state, "wl-b1", 3, "lq-b", created=0)
    add(state, "wl-c1", 1, "lq-c", created=0)
    assert sorted(cycle_and_confirm(state)) == ["default/wl-a1", "default/wl-b1", "default/wl-c1"]


def test_weight_divides_usage_and_resource_weights_multiply_it() -> None:
    config = AdmissionFairSharing(
        usage_half_life_seconds=10.0, usage_sampling_interval_seconds=1.0, resource_weights=(("cpu", 2.0),)
    )
    state = afs_state(
        lq("lq-a", consumed={"cpu": "8"}, weight="4"),
        lq("lq-b", consumed={"cpu": "3", "memory": "1"}),
        config=config,
    )
    assert state.fairness.usage("default/lq-a") == 4.0  # 2 * 8 / 4
    assert state.fairness.usage("default/lq-b") == 7.0  # 2 * 3 + 1
    add(state, "wl-b1", 8, "lq-b", created=0)
    add(state, "wl-a1", 8, "lq-a", created=1)
    assert admitted(state.cycle()) == ["default/wl-a1"]


def test_a_failed_admission_write_takes_its_penalty_back() -> None:
    state = afs_state(lq("lq-a", consumed={"cpu": "4"}))
    add(state, "wl-a1", 4, "lq-a", created=0)
    assert admitted(state.cycle()) == ["default/wl-a1"]
    assert state.fairness.usage("default/lq-a") > 4.0
    state.forget("default/wl-a1")
    assert state.fairness.usage("default/lq-a") == 4.0


def test_the_penalty_is_folded_into_consumed_when_the_admission_is_seen() -> None:
    state = afs_state(lq("lq-a", consumed={"cpu": "4"}))
    add(state, "wl-a1", 4, "lq-a", created=0)
    state.cycle()
    with_penalty = state.fairness.usage("default/lq-a")
    state.confirm("default/wl-a1")
    assert state.fairness.usage("default/lq-a") == with_penalty
    consumed = state.fairness.consumed("default/lq-a")
    assert consumed is not None and consumed[0] == {
        "cpu": scaled({"cpu": 4 * NANO}, 1 - 0.5**0.1)["cpu"] + 4 * NANO
    }


def test_a_sample_moves_consumed_towards_current_usage_by_the_half_life() -> None:
    state = afs_state(lq("lq-a", consumed={"cpu": "8"}), lq("lq-b"))
    add(state, "wl-b1", 2, "lq-b", created=0)
    assert cycle_and_confirm(state) == ["default/wl-b1"]
    assert state.sample_admission_usage(state.fairness.now + 10) == ["default/lq-a", "default/lq-b"]
    a, b = state.fairness.consumed("default/lq-a"), state.fairness.consumed("default/lq-b")
    assert a is not None and a[0] == {"cpu": 4 * NANO}  # half of 8 after one half-life, nothing running
    penalty = scaled({"cpu": 2 * NANO}, 1 - 0.5**0.1)["cpu"]
    assert b is not None and b[0] == {"cpu": penalty // 2 + NANO}  # half the penalty, half of 2 running


def test_a_half_life_of_zero_forgets_past_usage_at_each_sample() -> None:
    config = AdmissionFairSharing(usage_half_life_seconds=0.0, usage_sampling_interval_seconds=1.0)
    state = afs_state(lq("lq-a", consumed={"cpu": "8"}), config=config)
    state.sample_admission_usage(state.fairness.now + 1)
    consumed = state.fairness.consumed("default/lq-a")
    assert consumed is not None and consumed[0] == {}


def test_the_status_is_taken_in_once() -> None:
    """A restarted controller goes on from the consumed resources its LocalQueues' statuses show; the
    same status read again (an update of the LocalQueue's spec) is not added a second time."""
    state = afs_state(lq("lq-a", consumed={"cpu": "3"}))
    state.upsert_local_queue(lq("lq-a", consumed={"cpu": "3"}, weight="1"))
    assert state.fairness.usage("default/lq-a") == 3.0


def test_arithmetic_rounds_down_to_nano_units_as_kueue_does() -> None:
    assert scaled({"cpu": 1}, 0.5) == {"cpu": 0}
    assert scaled({"cpu": 3 * NANO}, 1 / 3) == {"cpu": 999_999_999}
    assert decayed({"cpu": 8 * NANO}, {"cpu": 0}, 10.0, 10.0) == {"cpu": 4 * NANO}
    assert decayed({"cpu": 8 * NANO}, {"cpu": 2 * NANO}, 5.0, 0.0) == {
        "cpu": 8 * NANO,
    }


def victim_of_a_higher_priority_arrival(
    config: AdmissionFairSharing | None, *, fair_sharing: bool
) -> list[str]:
    """wl-a1 (LocalQueue lq-a, consumed 6 cpu) then wl-b1 (lq-b, 1 cpu) fill 8 cpu; a Workload of priority
    100 needs 4 of them back: whom it evicts."""
    state = afs_state(
        lq("lq-a", consumed={"cpu": "6"}),
        lq("lq-b", consumed={"cpu": "1"}),
        lq("lq-c", consumed={"cpu": "9"}),
        cpu=8,
        config=config,
        preemption={"withinClusterQueue": "LowerPriority"},
    )
    state.configure_fair_sharing(enabled=fair_sharing)
    add(state, "wl-a1", 4, "lq-a", created=0)
    assert cycle_and_confirm(state) == ["default/wl-a1"]
    add(state, "wl-b1", 4, "lq-b", created=1)
    assert cycle_and_confirm(state) == ["default/wl-b1"]  # admitted after wl-a1: more recent
    state.upsert_workload(
        workload("high", {"cpu": "4"}, queue="lq-c", namespace="default", created=2, priority=100)
    )
    return [d.workload for d in run_until_quiet(state) if isinstance(d, Evict)]


def test_preemption_in_the_queue_takes_the_workload_of_the_localqueue_that_used_more_first() -> None:
    """Kueue's CandidatesOrdering, "workloads with higher LQ usage first": within the preemptor's
    ClusterQueue, a candidate of a LocalQueue with more usage goes before one of less usage, ahead of
    the "most recently admitted first" rule; without admission fair sharing that rule decides. The same
    under ``fairSharing`` preemption, which orders its candidates with the same rule."""
    for fair_sharing in (False, True):
        assert victim_of_a_higher_priority_arrival(CONFIG, fair_sharing=fair_sharing) == ["default/wl-a1"]
        assert victim_of_a_higher_priority_arrival(None, fair_sharing=fair_sharing) == ["default/wl-b1"]
