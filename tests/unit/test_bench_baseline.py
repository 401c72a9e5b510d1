"""The pure parts of the Kueue baseline benchmark: scenario, timeline, over-admission check, figures."""

from __future__ import annotations

import asyncio
import copy
from dataclasses import replace
from typing import Any

import pytest

from bench.baseline import profile, scenario
from bench.baseline.actor import Conflict, KueueActor, eviction_ack_apply, finished_apply
from bench.baseline.figures import (
    compute,
    finish_lag,
    held_cpu_seconds,
    windows,
)
from bench.baseline.kueue_recorder import CLASS_LABEL, KueueRecorder
from bench.baseline.runner import Run, eviction_ack_patch, finished_patch
from bench.baseline.timeline import Change, QuotaLimits, Timeline, Transition, check_over_admission
from bench.kueue_baseline import limits_of, parse_writes
from kueue_webhook.control.kube.client import ApiError
from kueue_webhook.control.kube.kinds import CLUSTER_QUEUES, WORKLOADS, Kind

JSON = dict[str, Any]


def workload(
    name: str,
    *,
    namespace: str = "cq-a",
    cls: str = "small",
    cpu: str = "1",
    conditions: dict[str, str] | None = None,
    admitted_to: str | None = None,
    version: str = "1",
) -> JSON:
    obj: JSON = {
        "metadata": {
            "name": name,
            "namespace": namespace,
            "resourceVersion": version,
            "generation": 1,
            "labels": {scenario.CLASS_LABEL: cls},
        },
        "spec": {
            "podSets": [
                {
                    "name": "main",
                    "count": 1,
                    "template": {
                        "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": cpu}}}]}
                    },
                }
            ]
        },
        "status": {
            "conditions": [
                {"type": kind, "status": status, "reason": "R", "message": "", "lastTransitionTime": "t"}
                for kind, status in (conditions or {}).items()
            ]
        },
    }
    if admitted_to:
        obj["status"]["admission"] = {
            "clusterQueue": admitted_to,
            "podSetAssignments": [{"name": "main", "resourceUsage": {"cpu": cpu}}],
        }
    return obj


RESERVED = {"QuotaReserved": "True", "Admitted": "True"}
DONE = {"QuotaReserved": "True", "Admitted": "True", "Finished": "True"}


# -- the scenario as Kueue's generator builds it (configs/baseline/generator.yaml) ------------------------


def test_baseline_plan_has_kueues_counts_names_and_pacing() -> None:
    plan = scenario.plan(scenario.BASELINE)
    assert len(plan.queues) == 30
    assert plan.workload_count == 15_000
    by_class: dict[str, int] = {}
    for stream in plan.streams:
        for planned in stream.workloads:
            by_class[planned.template.class_name] = by_class.get(planned.template.class_name, 0) + 1
    assert by_class == {"small": 10_500, "medium": 3_000, "large": 1_500}
    assert plan.cpu_seconds() == 39_600  # 66 s of work on 600 cpu: the shortest possible run
    assert plan.nominal_cpu() == 600
    assert {q.cohort for q in plan.queues} == {f"cohort-{i}" for i in range(5)}
    assert plan.queues[8].name == "cq-0-2-cohort-1"
    intervals = {s.workloads[0].template.class_name: s.interval_ms for s in plan.streams}
    assert intervals == {"small": 100, "medium": 500, "large": 1200}
    first_stream = plan.streams[0]
    assert [w.name for w in first_stream.workloads[:2]] == ["small-0-0-0", "small-0-1-0"]
    assert plan.streams[2].workloads[-1].name == "large-2-49-0"


def test_large_scale_plan_has_1000_queues_and_50000_workloads() -> None:
    plan = scenario.plan(scenario.LARGE)
    assert len(plan.queues) == 1000
    assert len({q.cohort for q in plan.queues}) == 10
    assert plan.workload_count == 50_000
    runtimes = {s.workloads[0].template.class_name: s.workloads[0].template.runtime_ms for s in plan.streams}
    assert runtimes == {"small": 150, "medium": 350, "large": 700}


def test_manifests_carry_priority_run_time_label_and_quota() -> None:
    plan = scenario.plan(scenario.BASELINE)
    stream = next(s for s in plan.streams if s.workloads[0].template.class_name == "medium")
    obj = scenario.workload(stream.workloads[0])
    assert obj["spec"]["priority"] == 100
    assert obj["spec"]["queueName"] == stream.queue.name == obj["metadata"]["namespace"]
    assert obj["metadata"]["labels"][scenario.RUNNING_TIME_LABEL] == "500"
    assert obj["spec"]["podSets"][0]["template"]["spec"]["containers"][0]["resources"] == {
        "requests": {"cpu": "5"}
    }
    cq = scenario.cluster_queue(stream.queue)
    quota = cq["spec"]["resourceGroups"][0]["flavors"][0]["resources"][0]
    assert (quota["nominalQuota"], quota["borrowingLimit"]) == ("20", "100")
    assert cq["spec"]["preemption"] == {"reclaimWithinCohort": "Any", "withinClusterQueue": "LowerPriority"}
    assert cq["spec"]["cohortName"] == stream.queue.cohort


def test_quota_limits_of_the_baseline_are_the_cohorts_nominal_total() -> None:
    limits = limits_of(scenario.plan(scenario.BASELINE))
    # 20 nominal + 100 borrowing, but the cohort only has 6 x 20 = 120 to lend
    assert set(limits.cluster_queue.values()) == {120_000}
    assert set(limits.cohort.values()) == {120_000}


# -- timeline ------------------------------------------------------------------------------------------------


def test_timeline_records_reservation_admission_and_release_on_finish() -> None:
    timeline = Timeline(class_label=scenario.CLASS_LABEL)
    timeline.created("cq-a/w", class_name="small", cluster_queue="cq-a", at=1.0)
    assert timeline.observe(workload("w"), at=1.1) == []
    changes = timeline.observe(workload("w", conditions=RESERVED, admitted_to="cq-a", cpu="500m"), at=2.0)
    assert [(t.change, t.cpu_milli) for t in changes] == [(Change.RESERVED, 500), (Change.ADMITTED, 0)]
    # the same state seen again (a watch resumed from an older version) changes nothing
    assert timeline.observe(workload("w", conditions=RESERVED, admitted_to="cq-a", cpu="500m"), at=2.1) == []
    changes = timeline.observe(workload("w", conditions=DONE, admitted_to="cq-a", cpu="500m"), at=3.0)
    assert [(t.change, t.cpu_milli) for t in changes] == [(Change.FINISHED, 0), (Change.RELEASED, 500)]
    record = timeline.records["cq-a/w"]
    assert (record.created_at, record.admitted_at, record.finished_at) == (1.0, 2.0, 3.0)


def test_timeline_eviction_releases_when_the_owner_clears_the_reservation() -> None:
    timeline = Timeline(class_label=scenario.CLASS_LABEL)
    timeline.observe(workload("w", conditions=RESERVED, admitted_to="cq-a"), at=1.0)
    evicted = timeline.observe(
        workload("w", conditions={**RESERVED, "Evicted": "True"}, admitted_to="cq-a"), at=2.0
    )
    assert [t.change for t in evicted] == [Change.EVICTED]  # still holding until acknowledged
    cleared = timeline.observe(
        workload("w", conditions={"QuotaReserved": "False", "Admitted": "False", "Evicted": "True"}), at=2.5
    )
    assert [t.change for t in cleared] == [Change.UNADMITTED, Change.RELEASED]
    assert timeline.records["cq-a/w"].evictions == 1


def _t(seq: int, change: Change, queue: str, cpu: int, at: float | None = None) -> Transition:
    return Transition(seq, float(seq) if at is None else at, f"{queue}/w{seq}", change, queue, cpu)


LIMITS = QuotaLimits({"a": 10_000, "b": 10_000}, {"a": "c", "b": "c"}, {"c": 12_000})


def test_over_admission_check_passes_a_timeline_within_quota_and_reports_peaks() -> None:
    transitions = [
        _t(1, Change.RESERVED, "a", 8_000),
        _t(2, Change.RESERVED, "b", 4_000),
        Transition(3, 3.0, "a/w1", Change.RELEASED, "a", 8_000),
        _t(4, Change.RESERVED, "b", 6_000),
    ]
    report = check_over_admission(transitions, LIMITS)
    assert report.violations == []
    assert report.max_cluster_queue == {"a": 8_000, "b": 10_000}
    assert report.max_cohort == {"c": 12_000}
    assert report.held_at_end == {"b": 10_000}


def test_over_admission_check_catches_the_cohort_exceeded_for_one_instant() -> None:
    transitions = [
        _t(1, Change.RESERVED, "a", 8_000),
        _t(2, Change.RESERVED, "b", 5_000),  # 13 cpu in a 12 cpu cohort, released right after
        Transition(3, 3.0, "a/w1", Change.RELEASED, "a", 8_000),
    ]
    report = check_over_admission(transitions, LIMITS)
    assert [(v.seq, v.scope, v.used_milli, v.limit_milli) for v in report.violations] == [
        (2, "cohort c", 13_000, 12_000)
    ]


def test_over_admission_check_orders_by_commit_sequence_not_receipt_time() -> None:
    # the release was committed first (seq 2) though stamped later: no instant held 11 cpu in queue a
    transitions = [
        _t(1, Change.RESERVED, "a", 6_000),
        _t(3, Change.RESERVED, "a", 5_000, at=2.0),
        Transition(2, 2.5, "a/w1", Change.RELEASED, "a", 6_000),
    ]
    assert check_over_admission(transitions, LIMITS).violations == []


# -- figures ----------------------------------------------------------------------------------------------


def test_figures_wall_usage_and_mean_time_to_admission_per_class() -> None:
    timeline = Timeline(class_label=scenario.CLASS_LABEL)
    for name, cls, created, admitted, finished, cpu in (
        ("s1", "small", 0.0, 1.0, 3.0, "1"),
        ("s2", "small", 0.5, 3.5, 4.0, "1"),
        ("l1", "large", 1.0, 2.0, 4.0, "2"),
    ):
        timeline.created(f"cq-a/{name}", class_name=cls, cluster_queue="cq-a", at=created)
        timeline.observe(
            workload(name, cls=cls, cpu=cpu, conditions=RESERVED, admitted_to="cq-a"), at=admitted
        )
        timeline.observe(workload(name, cls=cls, cpu=cpu, conditions=DONE, admitted_to="cq-a"), at=finished)
    figures = compute(timeline, expected=4, nominal_cpu=2, first_creation_at=0.0, end_at=4.0)
    assert figures.wall_s == 4.0
    # held: 1 cpu x 2 s + 1 cpu x 0.5 s + 2 cpu x 2 s = 6.5 cpu-s over 2 cpu x 4 s
    assert figures.usage_percent == pytest.approx(81.25)
    assert figures.classes["small"].mean_time_to_admission_s == pytest.approx(2.0)
    assert figures.classes["small"].max_time_to_admission_s == pytest.approx(3.0)
    assert figures.classes["large"].mean_time_to_admission_s == pytest.approx(1.0)
    assert not figures.every_workload_finished and figures.unfinished == 1


def test_finish_lag_is_the_hold_past_the_run_time_at_p50_and_p90() -> None:
    timeline = Timeline(class_label=scenario.CLASS_LABEL)
    runtime_ms = {}
    for i, lag in enumerate((0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 5.0)):
        name = f"w{i}"
        runtime_ms[f"cq-a/{name}"] = 2000
        timeline.created(f"cq-a/{name}", class_name="small", cluster_queue="cq-a", at=0.0)
        timeline.observe(workload(name, conditions=RESERVED, admitted_to="cq-a"), at=1.0)
        timeline.observe(workload(name, conditions=DONE, admitted_to="cq-a"), at=3.0 + lag)
    timeline.created("cq-a/running", class_name="small", cluster_queue="cq-a", at=0.0)
    timeline.observe(workload("running", conditions=RESERVED, admitted_to="cq-a"), at=1.0)
    lag = finish_lag(timeline, runtime_ms)  # the unfinished Workload has no lag yet
    assert lag["workloads"] == 10
    assert lag["p50_s"] == pytest.approx(0.5) and lag["p90_s"] == pytest.approx(0.9)  # nearest rank
    assert lag["max_s"] == pytest.approx(5.0)


def test_quota_still_held_at_the_end_counts_until_the_end() -> None:
    transitions = [_t(1, Change.RESERVED, "a", 2_000, at=1.0)]
    assert held_cpu_seconds(transitions, end_at=4.0) == pytest.approx(6.0)


def _cq_status(name: str, *, used: str, pending: int, reserving: int, active: bool = True) -> JSON:
    return {
        "metadata": {"name": name, "labels": {CLASS_LABEL: "cq"}},
        "spec": {
            "resourceGroups": [
                {"flavors": [{"name": "rf", "resources": [{"name": "cpu", "nominalQuota": "10"}]}]}
            ]
        },
        "status": {
            "flavorsUsage": [{"name": "rf", "resources": [{"name": "cpu", "total": used}]}],
            "pendingWorkloads": pending,
            "reservingWorkloads": reserving,
            "conditions": [{"type": "Active", "status": "True" if active else "False"}],
        },
    }


def test_kueue_recorder_integrates_queue_status_between_events_as_kueues_recorder() -> None:
    recorder = KueueRecorder()
    recorder.record_cluster_queue(_cq_status("a", used="0", pending=3, reserving=0), at=0.0)
    recorder.record_cluster_queue(_cq_status("a", used="10", pending=1, reserving=2), at=1.0)
    assert recorder.expects_more()
    recorder.record_cluster_queue(_cq_status("a", used="5", pending=0, reserving=1), at=3.0)
    recorder.record_cluster_queue(_cq_status("a", used="0", pending=0, reserving=0), at=4.0)
    assert not recorder.expects_more()
    group = recorder.summary()["clusterQueueClasses"]["cq"]
    # 10 cpu x 2 s + 5 cpu x 1 s = 25,000,000 milli-cpu x ms, over 4 s: 6.25 cpu of 10 on average
    assert group["cpuUsed"] == 25_000_000
    assert group["cpuAverageUsage"] == 6250 and group["nominalQuota"] == 10_000
    assert group["usagePercent"] == pytest.approx(62.5)


def test_kueue_recorder_end_ignores_inactive_queues() -> None:
    recorder = KueueRecorder()
    recorder.record_cluster_queue(_cq_status("a", used="0", pending=4, reserving=0, active=False), at=0.0)
    assert not recorder.expects_more()


def _wl_seen(*, admitted: bool = False, evicted: bool = False, finished: bool = False, at: str = "") -> JSON:
    conditions = [
        {"type": "Admitted", "status": "True" if admitted else "False", "lastTransitionTime": at},
        {"type": "Evicted", "status": "True" if evicted else "False"},
        {"type": "Finished", "status": "True" if finished else "False"},
    ]
    return {
        "metadata": {
            "name": "w",
            "namespace": "ns",
            "uid": "u1",
            "labels": {CLASS_LABEL: "small"},
            "creationTimestamp": "2026-11-26T10:00:00Z",
        },
        "status": {"conditions": conditions},
    }


def test_kueue_recorder_time_to_admission_is_the_last_admissions_condition_time_minus_creation() -> None:
    recorder = KueueRecorder()
    recorder.record_workload(_wl_seen(), at=100.0)
    recorder.record_workload(_wl_seen(admitted=True, at="2026-11-26T10:00:02Z"), at=102.4)
    recorder.record_workload(_wl_seen(admitted=True, evicted=True, at="2026-11-26T10:00:02Z"), at=103.0)
    recorder.record_workload(_wl_seen(evicted=True, at="2026-11-26T10:00:03Z"), at=103.5)
    recorder.record_workload(_wl_seen(admitted=True, at="2026-11-26T10:00:07Z"), at=107.2)
    recorder.record_workload(_wl_seen(admitted=True, finished=True, at="2026-11-26T10:00:07Z"), at=108.0)
    small = recorder.summary()["workloadClasses"]["small"]
    # whole seconds from the API's timestamps, the later admission replacing the first
    assert small == {
        "count": 1,
        "totalEvictions": 1,
        "averageTimeToAdmissionMs": 7000,
        "averageTimeToFinishMs": 8000,
    }


def test_kueue_recorder_counts_a_never_admitted_workload_as_zero_in_the_mean() -> None:
    recorder = KueueRecorder()
    recorder.record_workload(_wl_seen(admitted=True, at="2026-11-26T10:00:04Z"), at=1.0)
    other = _wl_seen()
    other["metadata"]["uid"] = "u2"
    recorder.record_workload(other, at=1.0)
    assert recorder.summary()["workloadClasses"]["small"]["averageTimeToAdmissionMs"] == 2000


# -- the execution actor's writes -------------------------------------------------------------------------


def test_finish_patch_sets_finished_by_test_guarded_by_resource_version() -> None:
    obj = workload("w", conditions=RESERVED, admitted_to="cq-a", version="42")
    patch = finished_patch(obj)
    assert patch is not None
    assert patch[0] == {"op": "test", "path": "/metadata/resourceVersion", "value": "42"}
    conditions = {c["type"]: c for c in patch[1]["value"]}
    assert (conditions["Finished"]["status"], conditions["Finished"]["reason"]) == ("True", "ByTest")
    assert conditions["QuotaReserved"]["status"] == "True"  # the controller's conditions are kept
    assert finished_patch(workload("w", conditions=DONE)) is None


def test_eviction_acknowledgement_clears_the_reservation_as_kueues_runner_does() -> None:
    obj = workload("w", conditions={**RESERVED, "Evicted": "True"}, admitted_to="cq-a", version="7")
    patch = eviction_ack_patch(obj)
    assert patch is not None
    assert {"op": "remove", "path": "/status/admission"} in patch
    conditions = {c["type"]: c for c in patch[1]["value"]}
    assert (conditions["QuotaReserved"]["status"], conditions["QuotaReserved"]["reason"]) == (
        "False",
        "Pending",
    )
    assert conditions["QuotaReserved"]["message"] == "Evicted by the test runner"
    assert (conditions["Admitted"]["status"], conditions["Admitted"]["reason"]) == ("False", "NoReservation")
    assert eviction_ack_patch(workload("w", conditions={"QuotaReserved": "False"})) is None


# -- reporting helpers -------------------------------------------------------------------------------------


def test_controller_write_counts_are_read_from_its_metrics() -> None:
    text = "\n".join(
        [
            "# TYPE kueue_webhook_api_writes_total counter",
            'kueue_webhook_api_writes_total{kind="Workload",verb="patch-status"} 15000.0',
            'kueue_webhook_api_writes_total{kind="ClusterQueue",verb="patch-status"} 1200.0',
            'kueue_webhook_api_writes_created{kind="Workload",verb="patch-status"} 1.7e9',
        ]
    )
    assert parse_writes(text) == {"Workload patch-status": 15000, "ClusterQueue patch-status": 1200}


@pytest.mark.parametrize(
    ("stack", "bucket"),
    [
        (
            [
                "run (kueue_webhook/control/replica/main.py:103)",
                "cycle (kueue_webhook/core/scheduler.py:10)",
                "parse_quantity (kueue_webhook/api/quantity.py:205)",
            ],
            "scheduling (kueue_webhook/core)",
        ),
        (
            [
                "run (kueue_webhook/control/replica/main.py:103)",
                "KubeClient.watch (kueue_webhook/control/kube/client.py:260)",
                "loads (orjson)",
            ],
            "JSON encode/decode",
        ),
        (
            [
                "run (kueue_webhook/control/replica/main.py:103)",
                "KubeClient.watch (kueue_webhook/control/kube/client.py:255)",
                "StreamReader.readline (aiohttp/streams.py:1)",
            ],
            "watch handling (informers, store)",
        ),
        (
            [
                "run (kueue_webhook/control/replica/main.py:103)",
                "Writer.patch_status (kueue_webhook/control/output/writers.py:50)",
            ],
            "API writes (client verbs, writers)",
        ),
        (
            [
                "run (kueue_webhook/control/replica/main.py:103)",
                "_run_once (asyncio/base_events.py:1)",
                "SSLProtocol._do_read (asyncio/sslproto.py:1)",
            ],
            "HTTP + TLS transport (aiohttp, ssl)",
        ),
    ],
)
def test_profile_samples_are_charged_to_the_component_that_spent_them(stack: list[str], bucket: str) -> None:
    assert profile.bucket_of(stack) == bucket


def test_samples_in_the_event_loops_wait_get_no_share_of_the_measured_cpu() -> None:
    # py-spy samples uvloop's wait for events (epoll_pwait) as activity
    loop = "main (kueue_webhook/cli.py:76);run (uvloop/__init__.py:92);Runner.run (asyncio/runners.py:118)"
    lines = [
        f"{loop};Store.upsert (kueue_webhook/control/cache/store.py:420) 3\n",
        f"{loop} 4\n",
        f"{loop};uv_run (core.c:452);epoll_pwait (libc.so.6) 2\n",
        f"{loop};task_step (_asynciomodule.c:2990);cycle (kueue_webhook/core/scheduler.py:10) 1\n",
    ]
    rows = {row["bucket"]: row for row in profile.breakdown(lines, cpu_s=8.0)}
    assert rows[profile.LOOP_WAIT] == {"bucket": profile.LOOP_WAIT, "cpu_s": None, "percent": 60.0}
    assert rows["watch handling (informers, store)"]["cpu_s"] == 6.0
    assert rows["scheduling (kueue_webhook/core)"]["cpu_s"] == 2.0


def test_own_time_charges_each_sample_to_its_innermost_python_frame() -> None:
    lines = [
        "run (kueue_webhook/control/replica/main.py:103);upsert (kueue_webhook/control/cache/store.py:9) 3\n",
        "run (kueue_webhook/control/replica/main.py:103);loads (orjson/__init__.py:1);0x7f (libc.so.6) 1\n",
        "run (kueue_webhook/control/replica/main.py:103) 1\n",
    ]
    assert profile.own_time(lines) == [
        {"function": "upsert (kueue_webhook/control/cache/store.py)", "percent": 60.0},
        {"function": "loads (orjson/__init__.py)", "percent": 20.0},
        {"function": "run (kueue_webhook/control/replica/main.py)", "percent": 20.0},
    ]


def test_windows_show_usage_and_admission_rate_per_phase() -> None:
    transitions = [
        Transition(1, 0.0, "a/w1", Change.RESERVED, "a", 2_000),
        Transition(2, 0.0, "a/w1", Change.ADMITTED, "a", 0),
        Transition(3, 15.0, "a/w1", Change.FINISHED, "a", 0),
        Transition(4, 15.0, "a/w1", Change.RELEASED, "a", 2_000),
    ]
    first, second = windows(transitions, nominal_cpu=2, start=0.0, end=20.0, width=10.0)
    assert (first.usage_percent, first.admissions_per_s, first.finished_per_s) == (100.0, 0.1, 0.0)
    assert (second.start_s, second.usage_percent, second.finished_per_s) == (10.0, 50.0, 0.1)


# -- the live run against an in-memory API with a trivial admitter -----------------------------------------


class MemoryApi:
    """Stores objects, streams watch events, applies the JSON Patches the actor sends; a trivial
    controller admits every Workload at once and evicts the ones named ``evict-*`` once."""

    def __init__(self) -> None:
        self.objects: dict[tuple[str, str, str], JSON] = {}
        self.version = 0
        self.watchers: dict[str, list[asyncio.Queue[JSON]]] = {}
        self.evicted: set[str] = set()
        self.patches: list[tuple[str, list[JSON]]] = []
        self.applies: list[tuple[str, JSON]] = []
        #: the time limit each creation was sent with, per kind
        self.create_timeouts: list[tuple[str, float | None]] = []

    def _commit(self, kind: Kind, obj: JSON, event: str) -> JSON:
        self.version += 1
        obj["metadata"]["resourceVersion"] = str(self.version)
        meta = obj["metadata"]
        self.objects[(kind.plural, meta.get("namespace", ""), meta["name"])] = obj
        for queue in self.watchers.get(kind.plural, []):
            queue.put_nowait({"type": event, "object": copy.deepcopy(obj)})
        if kind is WORKLOADS:
            asyncio.get_running_loop().call_soon(self._control, copy.deepcopy(obj))
        return copy.deepcopy(obj)

    def _control(self, obj: JSON) -> None:
        name = obj["metadata"]["name"]
        status = obj.setdefault("status", {})
        conditions = {c["type"]: c["status"] for c in status.get("conditions", [])}
        if conditions.get("Finished") == "True":
            return
        if conditions.get("QuotaReserved") != "True":
            status["conditions"] = [
                {"type": "QuotaReserved", "status": "True", "reason": "QuotaReserved"},
                {"type": "Admitted", "status": "True", "reason": "Admitted"},
            ]
            status["admission"] = {
                "clusterQueue": obj["metadata"]["namespace"],
                "podSetAssignments": [{"name": "main", "resourceUsage": {"cpu": "1"}}],
            }
            self._commit(WORKLOADS, obj, "MODIFIED")
        elif name.startswith("evict-") and name not in self.evicted:
            self.evicted.add(name)
            status["conditions"].append({"type": "Evicted", "status": "True", "reason": "Preempted"})
            self._commit(WORKLOADS, obj, "MODIFIED")

    async def create(
        self, kind: Kind, body: JSON, *, namespace: str | None = None, timeout: float | None = 30.0
    ) -> JSON:
        self.create_timeouts.append((kind.plural, timeout))
        obj = copy.deepcopy(body)
        if kind is CLUSTER_QUEUES:
            obj["status"] = {"conditions": [{"type": "Active", "status": "True"}]}
        return self._commit(kind, obj, "ADDED")

    async def get(self, kind: Kind, *, name: str, namespace: str | None = None) -> JSON:
        key = (kind.plural, namespace or "", name)
        if key not in self.objects:
            raise ApiError(status=404, reason="NotFound", message=f'{kind.plural} "{name}" not found')
        return copy.deepcopy(self.objects[key])

    async def delete(
        self, kind: Kind, *, name: str, namespace: str | None = None, propagation: str | None = None
    ) -> JSON:
        return self.objects.pop((kind.plural, namespace or "", name))

    async def patch(
        self,
        kind: Kind,
        *,
        name: str,
        patch: Any,
        namespace: str | None = None,
        patch_type: Any = "merge",
        subresource: str = "",
    ) -> JSON:
        assert (patch_type, subresource) == ("json", "status")
        obj = copy.deepcopy(self.objects[(kind.plural, namespace or "", name)])
        for op in patch:
            if op["op"] == "test" and obj["metadata"]["resourceVersion"] != op["value"]:
                raise ApiError(status=422, reason="Invalid", message="test failed")
            if op["op"] == "add":
                obj.setdefault("status", {})[op["path"].rsplit("/", 1)[1]] = op["value"]
            if op["op"] == "remove":
                del obj["status"][op["path"].rsplit("/", 1)[1]]
        self.patches.append((name, patch))
        return self._commit(kind, obj, "MODIFIED")

    async def request(
        self,
        method: str,
        path: str,
        *,
        query: Any = None,
        body: Any = None,
        content_type: str = "application/json",
    ) -> JSON:
        """A forced server-side apply of a Workload's status: conditions merged by type, a stale
        resourceVersion refused with 409."""
        assert (method, content_type) == ("PATCH", "application/apply-patch+yaml")
        assert path.endswith("/status") and query["force"] == "true"
        meta = body["metadata"]
        obj = copy.deepcopy(self.objects[(WORKLOADS.plural, meta["namespace"], meta["name"])])
        if obj["metadata"]["resourceVersion"] != meta["resourceVersion"]:
            raise ApiError(status=409, reason="Conflict", message="the object has been modified")
        conditions = obj.setdefault("status", {}).setdefault("conditions", [])
        for condition in body["status"].get("conditions", []):
            conditions[:] = [c for c in conditions if c["type"] != condition["type"]] + [condition]
        self.applies.append((query["fieldManager"], body))
        return self._commit(WORKLOADS, obj, "MODIFIED")

    async def list_all(self, kind: Kind, *, namespace: str | None = None) -> tuple[list[JSON], str]:
        self.watchers.setdefault(kind.plural, []).append(asyncio.Queue())
        items = [copy.deepcopy(o) for (plural, _, _), o in self.objects.items() if plural == kind.plural]
        return items, str(self.version)

    async def watch(self, kind: Kind, *, resource_version: str, timeout_seconds: int = 290) -> Any:
        queue = self.watchers[kind.plural][-1]
        while True:
            yield await queue.get()


def evicting_plan() -> scenario.Plan:
    """Three small Workloads and three the trivial controller evicts once, run time 30 ms."""
    templates = (scenario.WorkloadTemplate("small", 30, 50, 1), scenario.WorkloadTemplate("evict", 30, 50, 1))
    queue_set = scenario.QueueSet(
        "cq", 1, 20, 100, "Any", "LowerPriority", (scenario.WorkloadSet(3, 5, templates),)
    )
    plan = scenario.plan(scenario.Shape("tiny", (scenario.CohortSet("cohort", 1, (queue_set,)),)))
    return replace(
        plan,
        streams=tuple(
            replace(
                stream,
                workloads=tuple(
                    replace(w, name=f"evict-{w.name}") if w.template.class_name == "evict" else w
                    for w in stream.workloads
                ),
            )
            for stream in plan.streams
        ),
    )


async def test_kueues_actor_finishes_and_acknowledges_with_forced_status_applies_per_field_manager() -> None:
    api = MemoryApi()
    plan = evicting_plan()
    run = Run(api=api, plan=plan, timeout=20, progress=lambda _: None)  # the default actor: Kueue's
    await run.execute(wait_active=5, idle_grace=1)
    assert not run.timed_out
    records = run.timeline.records
    assert len(records) == 6 and all(r.finished for r in records.values())
    assert sum(r.evictions for r in records.values()) == 3
    for record in records.values():  # finished no sooner than its run time after the (last) admission
        assert record.finished_at is not None and record.admitted_at is not None
        assert record.finished_at - record.admitted_at >= 0.03
    managers = sorted(manager for manager, _ in api.applies)
    assert managers == ["kueue-admission"] * 3 + ["kueue-job-controller-Finished"] * 6
    assert api.patches == []  # no JSON Patch: every write is an apply
    lag = finish_lag(run.timeline, run.runtime_ms)
    assert lag["workloads"] == 6 and lag["p50_s"] is not None and lag["p50_s"] >= 0
    assert check_over_admission(run.timeline.transitions, limits_of(plan)).violations == []


def admitted_workload(name: str, version: str = "7") -> JSON:
    obj = workload(name, conditions={"QuotaReserved": "True", "Admitted": "True"}, admitted_to="cq-a")
    obj["metadata"] |= {"uid": f"uid-{name}", "resourceVersion": version, "generation": 2}
    return obj


def test_finish_apply_carries_only_the_finished_condition_and_the_strict_identity() -> None:
    body = finished_apply(admitted_workload("w"), now=1_767_225_600.0)
    assert body == {
        "kind": "Workload",
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "metadata": {
            "name": "w",
            "namespace": "cq-a",
            "uid": "uid-w",
            "resourceVersion": "7",  # Kueue's strict apply: a stale cache gets a 409
            "generation": 2,
            "creationTimestamp": None,
            "labels": {scenario.CLASS_LABEL: "small"},
        },
        "spec": {"podSets": None},
        "status": {
            "conditions": [
                {
                    "type": "Finished",
                    "status": "True",
                    "observedGeneration": 2,
                    "lastTransitionTime": "2026-01-01T00:00:00Z",
                    "reason": "ByTest",
                    "message": "By test runner",
                }
            ]
        },
    }


def test_eviction_apply_clears_the_reservation_and_keeps_the_admission_managed_conditions() -> None:
    obj = admitted_workload("w")
    obj["status"]["conditions"].append(
        {"type": "Evicted", "status": "True", "reason": "Preempted", "message": "", "lastTransitionTime": "t"}
    )
    body = eviction_ack_apply(obj, now=1_767_225_600.0)
    assert body is not None
    status = body["status"]
    assert "admission" not in status  # omitted: the applier gives the field up
    assert [(c["type"], c["status"], c["reason"]) for c in status["conditions"]] == [
        ("QuotaReserved", "False", "Pending"),
        ("Evicted", "True", "Preempted"),
        ("Admitted", "False", "NoReservation"),
    ]
    assert body["metadata"]["resourceVersion"] == "7"
    cleared = workload("w", conditions={"QuotaReserved": "False", "Evicted": "True"})
    cleared["status"]["conditions"][0] |= {"reason": "Pending", "message": "Evicted by the test runner"}
    cleared["status"]["conditions"][0]["observedGeneration"] = 1
    assert eviction_ack_apply(cleared, now=0.0) is None  # nothing changes: Kueue sends nothing


async def test_kueues_actor_keeps_at_most_five_writes_in_flight_and_writes_each_workload_once() -> None:
    cache = {f"ns/w{i}": admitted_workload(f"w{i}") for i in range(12)}
    started: list[str] = []
    five_started = asyncio.Event()
    release = asyncio.Event()

    async def apply(key: str, body: JSON, manager: str) -> None:
        started.append(key)
        if len(started) == 5:
            five_started.set()
        await release.wait()

    actor = KueueActor(read=cache.get, apply=apply, runtime_ms=lambda _: 0)
    workers = asyncio.create_task(actor.run())
    for key, obj in cache.items():
        actor.observe(key, obj)
        actor.observe(key, obj)  # a second event for a queued key does not queue it twice
    await five_started.wait()
    for _ in range(50):  # let every other worker and queued key have its turn on the loop
        await asyncio.sleep(0)
    assert len(started) == 5 and actor.in_flight == 5
    release.set()
    while actor.writes < 12:
        await asyncio.sleep(0)
    workers.cancel()
    with pytest.raises(asyncio.CancelledError):
        await workers
    assert sorted(started) == sorted(cache) and actor.peak_in_flight == 5


async def test_kueues_actor_retries_a_conflict_with_the_newer_object_from_its_cache() -> None:
    cache = {"ns/w": admitted_workload("w")}
    attempts: list[str] = []
    done = asyncio.Event()

    async def apply(key: str, body: JSON, manager: str) -> None:
        attempts.append(body["metadata"]["resourceVersion"])
        if len(attempts) == 1:
            cache[key] = admitted_workload("w", version="8")  # the watch brings the newer object
            raise Conflict("the object has been modified")
        done.set()

    actor = KueueActor(read=cache.get, apply=apply, runtime_ms=lambda _: 0)
    workers = asyncio.create_task(actor.run())
    actor.observe("ns/w", cache["ns/w"])
    await done.wait()
    workers.cancel()
    with pytest.raises(asyncio.CancelledError):
        await workers
    assert attempts == ["7", "8"] and actor.conflicts == 1 and actor.writes == 1


async def test_kueues_actor_waits_out_the_run_time_from_when_it_saw_the_admission() -> None:
    cache = {"ns/w": admitted_workload("w")}
    now = [100.0]
    actor = KueueActor(
        read=cache.get, apply=lambda *_: asyncio.sleep(0), runtime_ms=lambda _: 2000, clock=lambda: now[0]
    )
    actor.observe("ns/w", cache["ns/w"])
    now[0] = 100.5
    assert await actor._reconcile("ns/w") == pytest.approx(1.5)  # requeued for the rest of its run time
    now[0] = 102.0
    assert await actor._reconcile("ns/w") is None and actor.writes == 1


async def test_a_run_finishes_every_workload_after_its_run_time_and_acknowledges_evictions() -> None:
    templates = (scenario.WorkloadTemplate("small", 30, 50, 1), scenario.WorkloadTemplate("evict", 30, 50, 1))
    queue_set = scenario.QueueSet(
        "cq", 1, 20, 100, "Any", "LowerPriority", (scenario.WorkloadSet(3, 5, templates),)
    )
    shape = scenario.Shape("tiny", (scenario.CohortSet("cohort", 1, (queue_set,)),))
    api = MemoryApi()
    plan = scenario.plan(shape)
    # name the second template's Workloads evict-* so the trivial controller evicts them once
    plan = replace(
        plan,
        streams=tuple(
            replace(
                stream,
                workloads=tuple(
                    replace(w, name=f"evict-{w.name}") if w.template.class_name == "evict" else w
                    for w in stream.workloads
                ),
            )
            for stream in plan.streams
        ),
    )
    run = Run(api=api, plan=plan, timeout=20, progress=lambda _: None, actor="concurrent")
    await run.execute(wait_active=5, idle_grace=1)
    assert not run.timed_out
    records = run.timeline.records
    assert len(records) == 6 and all(r.finished for r in records.values())
    assert sorted(key for key, r in records.items() if r.evictions) == [
        "cq-0-0-cohort-0/evict-evict-0-0-1",
        "cq-0-0-cohort-0/evict-evict-0-1-1",
        "cq-0-0-cohort-0/evict-evict-0-2-1",
    ]
    for record in records.values():  # finished no sooner than its run time after the (last) admission
        assert record.finished_at is not None and record.admitted_at is not None
        assert record.finished_at - record.admitted_at >= 0.03
    acknowledgements = [p for _, p in api.patches if {"op": "remove", "path": "/status/admission"} in p]
    assert len(acknowledgements) == 3
    finishes = [
        p
        for _, p in api.patches
        for op in p
        if op["path"] == "/status/conditions" and any(c.get("reason") == "ByTest" for c in op["value"])
    ]
    assert len(finishes) == 6
    assert check_over_admission(run.timeline.transitions, limits_of(plan)).violations == []
    # Kueue's generator creates on client-go's default rest.Config (no client-side timeout): a slow API
    # server delays the stream instead of ending the run
    assert {timeout for plural, timeout in api.create_timeouts if plural == "workloads"} == {None}


def test_tas_plan_has_kueues_nodes_classes_and_topology_requests() -> None:
    """configs/tas/generator.yaml as the runner's generator and topology_generator create it."""
    plan = scenario.plan(scenario.TAS)
    assert plan.workload_count == 15_000 and plan.nominal_cpu() == 600
    assert plan.cpu_seconds() == scenario.plan(scenario.BASELINE).cpu_seconds()
    topology = scenario.TAS.topology
    assert topology is not None
    nodes = scenario.nodes(topology)
    assert len(nodes) == 640
    node, status = nodes[75]
    assert node["metadata"]["name"] == "node-b0-r1-n11"
    assert node["metadata"]["labels"]["cloud.provider.com/topology-rack"] == "rack-1"
    assert node["metadata"]["labels"]["kubernetes.io/hostname"] == "node-11"  # repeats in every rack
    assert status["status"]["allocatable"] == {"cpu": "96", "memory": "256Gi", "pods": "110"}
    flavor = scenario.resource_flavor(scenario.TAS)
    assert flavor["spec"] == {"nodeLabels": {"tas-node-group": "tas"}, "topologyName": "default-topology"}
    queue = plan.queues[0]
    assert (
        scenario.cluster_queue(queue, scenario.TAS.flavor)["spec"]["resourceGroups"][0]["flavors"][0]["name"]
        == "tas-flavor"
    )
    by_class = {w.template.class_name: w for s in plan.streams for w in s.workloads}
    assert len(by_class) == 9
    pod_set = scenario.workload(by_class["large-balanced-rack"])["spec"]["podSets"][0]
    assert pod_set["count"] == 8
    assert pod_set["template"]["spec"]["containers"][0]["resources"]["requests"] == {"cpu": "2500m"}
    assert pod_set["topologyRequest"] == {
        "podSetSliceRequiredTopology": "cloud.provider.com/topology-rack",
        "podSetSliceSize": 4,
    }
    medium = scenario.workload(by_class["medium-required-rack"])["spec"]["podSets"][0]
    assert medium["topologyRequest"] == {"required": "cloud.provider.com/topology-rack"}
    assert medium["template"]["spec"]["containers"][0]["resources"]["requests"] == {"cpu": "1250m"}
    assert "topologyRequest" not in scenario.workload(plan_baseline_workload())["spec"]["podSets"][0]


def plan_baseline_workload() -> scenario.PlannedWorkload:
    return scenario.plan(scenario.SMOKE).streams[0].workloads[0]


def _admitted(hosts: list[str], counts: list[int]) -> dict[str, Any]:
    from kueue_webhook.api.topology_assignment import Domain, encode

    domains = [Domain((host,), count) for host, count in zip(hosts, counts, strict=True)]
    assignment = {"name": "main", "topologyAssignment": encode(["kubernetes.io/hostname"], domains)}
    return {"status": {"admission": {"podSetAssignments": [assignment]}}}


def test_topology_check_flags_a_required_pod_set_split_across_racks() -> None:
    from bench.baseline.topology_check import TopologyCheck

    check = TopologyCheck(scenario.TAS_TENTH.topology)  # type: ignore[arg-type]
    by_class = {
        w.template.class_name: w.template
        for s in scenario.plan(scenario.TAS_TENTH).streams
        for w in s.workloads
    }
    required, balanced = by_class["medium-required-rack"], by_class["medium-balanced-rack"]
    check.observe("ns/a", _admitted(["node-b0-r1-n1", "node-b0-r1-n2"], [2, 2]), required)
    check.observe("ns/b", _admitted(["node-b0-r1-n1", "node-b0-r2-n2"], [2, 2]), required)
    check.observe("ns/c", _admitted(["node-b0-r1-n1", "node-b0-r2-n2"], [2, 2]), balanced)
    check.observe("ns/d", _admitted(["node-b0-r1-n1", "node-b0-r2-n2"], [3, 1]), balanced)
    check.observe("ns/e", _admitted(["node-b0-r1-n1"], [3]), required)
    summary = check.summary()
    assert summary["required_in_one_rack"] == 2 and summary["balanced_with_whole_slices_per_rack"] == 1
    assert summary["violations"] == 3
    assert any("ns/b" in v for v in summary["first_violations"])
    assert any("ns/d" in v for v in summary["first_violations"])
    assert any("ns/e: 3 pods assigned" in v for v in summary["first_violations"])
