"""Queue status routing: a ClusterQueue change reaches the LocalQueues that point at it, and only those."""

from __future__ import annotations

from typing import Any

from kueue_webhook.api.objects import (
    parse_cluster_queue,
    parse_cohort,
    parse_local_queue,
    parse_resource_flavor,
    parse_workload,
)
from kueue_webhook.control.cache.store import Store
from kueue_webhook.control.kube.api_health import WriteBudget
from kueue_webhook.control.kube.kinds import (
    CLUSTER_QUEUES,
    COHORTS,
    LOCAL_QUEUES,
    RESOURCE_FLAVORS,
    WORKLOADS,
    Kind,
)
from kueue_webhook.control.output.metrics import Metrics
from kueue_webhook.control.scheduling.queue_status_reporter import QueueStatusReporter
from kueue_webhook.core.scheduler import SchedulerState
from tests.support import builders
from tests.unit.control.fakes import control_context

JSON = dict[str, Any]


class RecordingWriter:
    """Applies status writes to the store (as the API server's answer would) and remembers them."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self.written: list[tuple[str, str, JSON]] = []
        self.version = 1000

    async def patch_status(self, kind: Kind, obj: JSON, build: Any) -> JSON | None:
        status = build(obj)
        self.version += 1
        updated = {
            **obj,
            "status": status,
            "metadata": {**obj["metadata"], "resourceVersion": str(self.version)},
        }
        self.written.append((kind.kind, obj["metadata"]["name"], status))
        self.store.upsert(kind, updated)
        return updated


def cluster_queue(name: str, *, version: int, stop_policy: str = "None") -> JSON:
    return builders.cluster_queue(
        name,
        {"rf": {"cpu": "4"}},
        metadata={"generation": version, "resourceVersion": str(version)},
        stopPolicy=stop_policy,
    )


def local_queue(name: str, *, to: str, version: int) -> JSON:
    return builders.local_queue(name, "team", to, metadata={"generation": 1, "resourceVersion": str(version)})


class World:
    def __init__(self, budget: WriteBudget | None = None) -> None:
        self.store = Store()
        self.state = SchedulerState()
        self.writer = RecordingWriter(self.store)
        self.metrics = Metrics()
        self.reporter = QueueStatusReporter(
            control_context(self.store, writer=self.writer, metrics=self.metrics, budget=budget),
            state=lambda: self.state,
        )
        self.store.subscribe(self.reporter.on_change)
        flavor = {"kind": "ResourceFlavor", "metadata": {"name": "rf", "resourceVersion": "1"}, "spec": {}}
        self.store.upsert(RESOURCE_FLAVORS, flavor)
        self.state.upsert_resource_flavor(parse_resource_flavor(flavor))  # type: ignore[arg-type]

    def put_cq(self, obj: JSON) -> None:
        self.writer.version += 1  # every object version is newer than any written before
        obj["metadata"]["resourceVersion"] = str(self.writer.version)
        self.state.upsert_cluster_queue(parse_cluster_queue(obj))  # type: ignore[arg-type]
        self.store.upsert(CLUSTER_QUEUES, obj)

    def put_lq(self, obj: JSON) -> None:
        self.writer.version += 1
        obj["metadata"]["resourceVersion"] = str(self.writer.version)
        self.state.upsert_local_queue(parse_local_queue(obj))  # type: ignore[arg-type]
        self.store.upsert(LOCAL_QUEUES, obj)

    def lq_reason(self, name: str) -> str:
        lq = self.store.get(LOCAL_QUEUES, name, "team") or {}
        conditions = (lq.get("status") or {}).get("conditions") or []
        return next(str(c["reason"]) for c in conditions if c["type"] == "Active")


def workload(name: str, *, queue: str, cpu: str, second: int) -> JSON:
    return {
        "metadata": {
            "name": name,
            "namespace": "team",
            "creationTimestamp": f"2026-01-01T00:00:{second:02d}Z",
        },
        "spec": {
            "queueName": queue,
            "podSets": [
                {
                    "name": "main",
                    "count": 1,
                    "template": {
                        "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": cpu}}}]}
                    },
                }
            ],
        },
    }


async def test_stopping_a_cluster_queue_reaches_the_local_queues_that_moved_to_it() -> None:
    world = World()
    world.put_cq(cluster_queue("a", version=2))
    world.put_cq(cluster_queue("b", version=3))
    world.put_lq(local_queue("research", to="a", version=4))
    await world.reporter.flush()
    assert world.lq_reason("research") == "Ready"

    world.put_lq(local_queue("research", to="b", version=5))
    await world.reporter.flush()
    world.put_cq(cluster_queue("a", version=6, stop_policy="Hold"))
    await world.reporter.flush()
    assert world.lq_reason("research") == "Ready"  # it no longer submits to the stopped queue

    world.put_cq(cluster_queue("b", version=7, stop_policy="Hold"))
    await world.reporter.flush()
    assert world.lq_reason("research") == "ClusterQueueIsInactive"


async def test_echo_of_a_cluster_queue_status_write_rewrites_no_local_queue() -> None:
    world = World()
    world.put_cq(cluster_queue("a", version=2))
    world.put_lq(local_queue("research", to="a", version=3))
    await world.reporter.flush()
    written = len(world.writer.written)
    assert written == 2  # one status each

    cq = world.store.get(CLUSTER_QUEUES, "a") or {}
    echo = {**cq, "metadata": {**cq["metadata"], "resourceVersion": "5000"}, "status": {**cq["status"]}}
    world.store.upsert(CLUSTER_QUEUES, echo)
    await world.reporter.flush()
    assert len(world.writer.written) == written


async def test_pending_workloads_metric_splits_active_and_inadmissible() -> None:
    """Kueue's kueue_pending_workloads{cluster_queue, status}: parked workloads are "inadmissible"."""
    world = World()
    world.put_cq(cluster_queue("a", version=2))
    world.put_lq(local_queue("research", to="a", version=3))
    for index, cpu in enumerate(("4", "4", "1")):
        body = workload(f"w{index}", queue="research", cpu=cpu, second=index)
        world.state.upsert_workload(parse_workload(body))  # type: ignore[arg-type]
        if index < 2:  # w0 takes the whole quota; w1 cannot fit and is parked; w2 is not tried yet
            world.state.cycle()
    world.reporter.mark_all()  # the metrics follow every flush
    await world.reporter.flush()

    def pending(status: str) -> float | None:
        return world.metrics.registry.get_sample_value(
            "kueue_pending_workloads", {"cluster_queue": "a", "status": status, "replica_role": "follower"}
        )

    assert (pending("active"), pending("inadmissible")) == (1.0, 1.0)


class CountedBudget:
    """Lets ``allowed`` writes through per pass (reset by the test), then refuses."""

    def __init__(self, allowed: int) -> None:
        self.allowed = allowed
        self.asked = 0

    def take(self, *, keep: float = 0.0) -> float:
        self.asked += 1
        if self.allowed > 0:
            self.allowed -= 1
            return 0.0
        return 1.0


def written_names(world: World) -> list[str]:
    return [name for kind, name, _ in world.writer.written if kind == "ClusterQueue"]


async def test_a_deferred_queue_status_is_written_first_next_time_with_the_numbers_of_then() -> None:
    """Under a refusing write budget the queues left over are written on a later pass, oldest first, and
    what is written is the state of that pass, not of the pass that deferred it."""
    budget = CountedBudget(allowed=1)
    world = World(budget)
    world.put_cq(cluster_queue("a", version=2))
    world.put_cq(cluster_queue("b", version=3))
    world.put_lq(local_queue("to-b", to="b", version=4))
    await world.reporter.flush()
    assert written_names(world) == ["a"]  # b (and its LocalQueue) wait for the budget

    world.state.upsert_workload(parse_workload(workload("w0", queue="to-b", cpu="1", second=0)))  # type: ignore[arg-type]
    world.state.cycle()  # w0 takes 1 cpu of b
    world.put_cq(cluster_queue("a", version=5, stop_policy="Hold"))  # a changes again
    budget.allowed = 1
    await world.reporter.flush()
    assert written_names(world) == ["a", "b"]  # the deferred queue before the newly changed one
    b_status = world.writer.written[-1][2]
    assert b_status["reservingWorkloads"] == 1
    assert b_status["flavorsReservation"][0]["resources"][0]["total"] == "1"

    budget.allowed = 5
    await world.reporter.flush()
    assert written_names(world) == ["a", "b", "a"]
    assert world.lq_reason("to-b") == "Ready"


async def test_queues_deferred_by_the_budget_keep_current_gauges_without_a_status_computed_per_pass() -> None:
    """A refused write defers the rest of the pass: the budget is asked once, not once per queue, and
    every queue's gauges still follow its changes."""
    budget = CountedBudget(allowed=0)
    world = World(budget)
    for index, name in enumerate(("a", "b", "c")):
        world.put_cq(cluster_queue(name, version=2 + index))
    world.put_lq(local_queue("to-c", to="c", version=9))
    world.state.upsert_workload(parse_workload(workload("w0", queue="to-c", cpu="1", second=0)))  # type: ignore[arg-type]
    world.state.cycle()
    world.reporter.mark_all()
    await world.reporter.flush()
    assert world.writer.written == []
    assert budget.asked == 1  # the first queue's write was refused: the others were deferred uncomputed

    def reserving(queue: str) -> float | None:
        return world.metrics.registry.get_sample_value(
            "kueue_reserving_active_workloads", {"cluster_queue": queue, "replica_role": "follower"}
        )

    assert (reserving("a"), reserving("c")) == (0.0, 1.0)
    await world.reporter.flush()  # nothing changed: the deferred queues wait, uncomputed
    assert budget.asked == 2


async def test_gpu_seconds_are_charged_to_queues_holding_gpus_only() -> None:
    world = World()
    flavor = {"kind": "ResourceFlavor", "metadata": {"name": "rf", "resourceVersion": "1"}, "spec": {}}
    world.store.upsert(RESOURCE_FLAVORS, flavor)
    world.put_cq(builders.cluster_queue("gpus", {"rf": {"nvidia.com/gpu": "8"}}, metadata={"generation": 1}))
    world.put_cq(cluster_queue("cpus", version=3))
    world.put_lq(local_queue("train", to="gpus", version=4))
    world.put_lq(local_queue("build", to="cpus", version=5))
    gpu_job = workload("g", queue="train", cpu="1", second=0)
    gpu_job["spec"]["podSets"][0]["template"]["spec"]["containers"][0]["resources"]["requests"] = {
        "nvidia.com/gpu": "2"
    }
    world.state.upsert_workload(parse_workload(gpu_job))  # type: ignore[arg-type]
    world.state.upsert_workload(parse_workload(workload("c", queue="build", cpu="1", second=1)))  # type: ignore[arg-type]
    world.state.cycle()
    await world.reporter.flush()
    await world.reporter.flush()

    def charged(queue: str, resource: str) -> float | None:
        return world.metrics.registry.get_sample_value(
            "kueue_webhook_cluster_queue_gpu_seconds_total", {"cluster_queue": queue, "resource": resource}
        )

    assert (charged("gpus", "nvidia.com/gpu") or 0) > 0
    assert charged("cpus", "cpu") is None


async def test_local_queue_gauges_follow_their_own_workloads_and_drop_a_deleted_queue() -> None:
    """Kueue's kueue_local_queue_* gauges (LocalQueueMetrics): pending active/inadmissible, reserving,
    admitted, resource reservation and usage of each LocalQueue's own Workloads, its Active status one-hot;
    its series go when it does."""
    world = World()
    world.put_cq(cluster_queue("a", version=2))
    world.put_lq(local_queue("research", to="a", version=3))
    world.put_lq(local_queue("ops", to="a", version=4))
    for index, (queue, cpu) in enumerate((("research", "3"), ("research", "4"), ("ops", "1"))):
        world.state.upsert_workload(parse_workload(workload(f"w{index}", queue=queue, cpu=cpu, second=index)))  # type: ignore[arg-type]
        world.state.cycle()  # w0 (3 cpu) and w2 (1 cpu) get in; w1 (4 cpu) is parked
    world.reporter.mark_all()
    await world.reporter.flush()

    def sample(name: str, queue: str, **labels: str) -> float | None:
        wanted = {"name": queue, "namespace": "team", **labels, "replica_role": "follower"}
        return world.metrics.registry.get_sample_value(name, wanted)

    pending = "kueue_local_queue_pending_workloads"
    assert (
        sample(pending, "research", status="active"),
        sample(pending, "research", status="inadmissible"),
    ) == (0, 1)
    assert sample("kueue_local_queue_reserving_active_workloads", "research") == 1
    assert sample("kueue_local_queue_reserving_active_workloads", "ops") == 1
    cpu = {"flavor": "rf", "resource": "cpu"}
    assert sample("kueue_local_queue_resource_reservation", "research", **cpu) == 3
    assert sample("kueue_local_queue_resource_reservation", "ops", **cpu) == 1
    assert sample("kueue_local_queue_status", "ops", active="True") == 1
    assert sample("kueue_local_queue_status", "ops", active="False") == 0
    world.store.remove(LOCAL_QUEUES, world.store.get(LOCAL_QUEUES, "ops", "team") or {})
    await world.reporter.flush()
    assert sample("kueue_local_queue_reserving_active_workloads", "ops") is None
    assert sample("kueue_local_queue_reserving_active_workloads", "research") == 1


async def test_cohort_subtree_series_sum_the_tree_below_each_cohort_and_count_admissions() -> None:
    """Kueue's MetricsForCohorts (on by default since v0.18): kueue_cohort_subtree_quota and
    _resource_reservations per flavor and resource, _admitted_active_workloads, the admissions counter of
    every cohort above the admitting ClusterQueue, and the hierarchy as kueue_cohort_info /
    kueue_cluster_queue_info. org (2 cpu of its own) holds team, which holds ClusterQueue a (4 cpu)."""
    world = World()
    org = builders.cohort("org", {"rf": {"cpu": "2"}})
    team = builders.cohort("team", parent="org")
    for body in (org, team):
        world.state.upsert_cohort(parse_cohort(body))  # type: ignore[arg-type]
        world.store.upsert(COHORTS, body)
    cq = cluster_queue("a", version=2)
    cq["spec"]["cohortName"] = "team"
    world.put_cq(cq)
    world.put_lq(local_queue("research", to="a", version=3))
    body = workload("w0", queue="research", cpu="3", second=0)
    world.state.upsert_workload(parse_workload(body))  # type: ignore[arg-type]
    world.state.cycle()
    admitted = {
        **body,
        "status": {
            "admission": {"clusterQueue": "a", "podSetAssignments": []},
            "conditions": [{"type": "Admitted", "status": "True"}],
        },
    }
    world.store.upsert(WORKLOADS, body)
    world.store.upsert(WORKLOADS, admitted)  # the Workload's admission, seen on the store
    world.reporter.mark_all()
    await world.reporter.flush()

    def sample(name: str, **labels: str) -> float | None:
        return world.metrics.registry.get_sample_value(name, {**labels, "replica_role": "follower"})

    cpu = {"flavor": "rf", "resource": "cpu"}
    assert sample("kueue_cohort_subtree_quota", cohort="org", **cpu) == 6
    assert sample("kueue_cohort_subtree_quota", cohort="team", **cpu) == 4
    assert sample("kueue_cohort_subtree_resource_reservations", cohort="org", **cpu) == 3
    assert sample("kueue_cohort_subtree_admitted_active_workloads", cohort="team") == 1
    counted = "kueue_cohort_subtree_admitted_workloads_total"
    assert [sample(counted, cohort=c, priority_class="") for c in ("team", "org")] == [1, 1]
    assert sample("kueue_cohort_info", cohort="team", parent_cohort="org", root_cohort="org") == 1
    assert sample("kueue_cluster_queue_info", cluster_queue="a", parent_cohort="team", root_cohort="org") == 1
    world.state.delete_cohort("org")
    world.state.delete_cohort("team")
    world.reporter.mark_all()
    await world.reporter.flush()
    assert sample("kueue_cohort_subtree_quota", cohort="org", **cpu) is None  # org is gone


async def test_unadmitted_workloads_are_counted_by_reason_and_cause_and_finished_ones_until_deleted() -> None:
    """Kueue's UnadmittedWorkloadsObservability (on by default since v0.19): kueue_unadmitted_workloads
    {cluster_queue, reason, underlying_cause} and its LocalQueue twin count the Workloads not admitted by
    their Admitted reason (NoReservation without one) and their QuotaReserved reason (PendingEvaluation
    without one); a count back at 0 drops its series."""
    world = World()
    world.put_cq(cluster_queue("a", version=2))
    world.put_lq(local_queue("research", to="a", version=3))

    def with_conditions(name: str, *conditions: tuple[str, str, str]) -> JSON:
        body = workload(name, queue="research", cpu="1", second=0)
        body["status"] = {"conditions": [{"type": t, "status": s, "reason": r} for t, s, r in conditions]}
        return body

    waiting = ("QuotaReserved", "False", "Pending"), ("Admitted", "False", "NoReservation")
    world.store.upsert(WORKLOADS, with_conditions("w0", ("Admitted", "True", "Admitted")))
    world.store.upsert(WORKLOADS, with_conditions("w1", *waiting))
    world.store.upsert(WORKLOADS, with_conditions("w2"))
    await world.reporter.flush()

    def count(cause: str, *, local: bool = False) -> float | None:
        labels = {"cluster_queue": "a", "reason": "NoReservation", "underlying_cause": cause}
        if local:
            labels |= {"name": "research", "namespace": "team"}
        name = "kueue_local_queue_unadmitted_workloads" if local else "kueue_unadmitted_workloads"
        return world.metrics.registry.get_sample_value(name, {**labels, "replica_role": "follower"})

    assert (count("Pending"), count("PendingEvaluation"), count("Pending", local=True)) == (1, 1, 1)
    world.store.upsert(WORKLOADS, with_conditions("w1", ("Admitted", "True", "Admitted")))
    world.store.upsert(WORKLOADS, with_conditions("w0", ("Finished", "True", "Succeeded")))
    await world.reporter.flush()
    assert (count("Pending"), count("PendingEvaluation")) == (None, 1)
    # Kueue's finished gauges: finished Workloads not deleted yet, per ClusterQueue and LocalQueue
    finished = world.metrics.registry.get_sample_value
    assert finished("kueue_finished_workloads", {"cluster_queue": "a", "replica_role": "follower"}) == 1
    lq = {"name": "research", "namespace": "team", "replica_role": "follower"}
    assert finished("kueue_local_queue_finished_workloads", lq) == 1
    world.store.remove(WORKLOADS, world.store.get(WORKLOADS, "w0", "team") or {})
    await world.reporter.flush()
    assert finished("kueue_finished_workloads", {"cluster_queue": "a", "replica_role": "follower"}) == 0
