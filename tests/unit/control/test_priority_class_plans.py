"""An object naming a priority class that does not exist gets no Workload, whatever its kind, as Kueue's
jobframework fails ``ExtractPriority`` and retries: it stays suspended (or gated) instead of queueing at a
priority nobody chose. Once the class exists the same plan creates the Workload with its value."""

from __future__ import annotations

from typing import Any

from kueue_webhook.api.integrations.engine import PriorityClasses
from kueue_webhook.control.jobs.job_plan import AwaitPriorityClass, CreateWorkload, plan_job
from kueue_webhook.control.jobs.leaderworkersets import plan_leaderworkerset
from kueue_webhook.control.jobs.pod_groups import plan_group
from kueue_webhook.control.jobs.statefulsets import plan_statefulset
from tests.unit.control import plans
from tests.unit.control.multikueue.test_gated_kinds import statefulset
from tests.unit.control.test_leaderworkersets import lws
from tests.unit.control.test_pod_group_plan import member

JSON = dict[str, Any]
WPC = "kueue.x-k8s.io"
URGENT = PriorityClasses(workload={"urgent": 500, "high": 50}, pod={"critical": 900})


def labelled(obj: JSON, wpc: str) -> JSON:
    obj["metadata"].setdefault("labels", {})["kueue.x-k8s.io/priority-class"] = wpc
    return obj


def created_priority(step: object) -> int:
    assert isinstance(step, CreateWorkload), step
    priority = step.body["spec"]["priority"]
    assert isinstance(priority, int)
    return priority


def test_a_job_naming_an_absent_workload_priority_class_waits_for_it() -> None:
    job = labelled(plans.job(), "urgent")
    waiting = plan_job(job, None, flavors=lambda _: None)
    assert waiting == AwaitPriorityClass(WPC, "urgent")
    assert created_priority(plan_job(job, None, flavors=lambda _: None, classes=URGENT)) == 500


def test_a_job_whose_template_names_an_absent_priority_class_waits_for_it() -> None:
    job = plans.job()
    job["spec"]["template"]["spec"]["priorityClassName"] = "critical"
    waiting = plan_job(job, None, flavors=lambda _: None)
    assert waiting == AwaitPriorityClass("scheduling.k8s.io", "critical")
    assert created_priority(plan_job(job, None, flavors=lambda _: None, classes=URGENT)) == 900


def test_a_job_naming_no_class_is_never_held_back() -> None:
    assert created_priority(plan_job(plans.job(), None, flavors=lambda _: None)) == 0


def test_a_pod_group_a_statefulset_and_a_leaderworkerset_wait_for_their_class_too() -> None:
    pods = [labelled(member(name), "urgent") for name in ("a", "b")]
    assert plan_group("g", pods, None, flavors=lambda _: None) == AwaitPriorityClass(WPC, "urgent")
    assert created_priority(plan_group("g", pods, None, flavors=lambda _: None, classes=URGENT)) == 500

    sts = statefulset("sts-uid", labels={"kueue.x-k8s.io/priority-class": "urgent"})
    assert plan_statefulset(sts, [], None, managed=True) == AwaitPriorityClass(WPC, "urgent")
    assert created_priority(plan_statefulset(sts, [], None, managed=True, classes=URGENT)) == 500

    group = lws()  # labelled "high"
    assert plan_leaderworkerset(group, [], [], managed=True) == AwaitPriorityClass(WPC, "high")
    assert created_priority(plan_leaderworkerset(group, [], [], managed=True, classes=URGENT)) == 50


def test_the_default_priority_class_is_the_lowest_of_those_claiming_it() -> None:
    """Kueue's getDefaultPriorityClass: two globalDefault classes only arise from a race; the lower wins."""
    classes = PriorityClasses.from_objects(
        [{"metadata": {"name": "urgent"}, "value": 500}],
        [
            {"metadata": {"name": "a"}, "value": 300, "globalDefault": True},
            {"metadata": {"name": "b"}, "value": 200, "globalDefault": True},
            {"metadata": {"name": "c"}, "value": 100},
        ],
    )
    assert classes == PriorityClasses({"urgent": 500}, {"a": 300, "b": 200, "c": 100}, ("b", 200))
    assert created_priority(plan_job(plans.job(), None, flavors=lambda _: None, classes=classes)) == 200
