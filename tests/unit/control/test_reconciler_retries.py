"""A failed reconcile is retried with backoff, except where the API server's answer says a retry is futile."""

from __future__ import annotations

import json

from kueue_webhook.control.cache.store import Store
from kueue_webhook.control.cache.workqueue import WorkQueue
from kueue_webhook.control.jobs.reconciler import JobReconciler, namespace_terminating
from kueue_webhook.control.kube.client import ApiError
from tests.golden import GOLDEN
from tests.unit.control.fakes import control_context

KEY = ("batch/job", "team", "train")


def terminating() -> ApiError:
    capture = json.loads((GOLDEN / "error-403-namespace-terminating.json").read_text())
    return ApiError.from_status(capture["response"]["body"], http_status=403)


def test_kube_apiservers_refusal_in_a_terminating_namespace_is_recognised() -> None:
    assert namespace_terminating(terminating())
    rbac = ApiError(status=403, reason="Forbidden", message='workloads is forbidden: User "x" cannot create')
    assert not namespace_terminating(rbac)
    assert not namespace_terminating(RuntimeError("boom"))


async def test_a_job_in_a_namespace_being_deleted_is_not_retried_other_failures_are() -> None:
    """The namespace controller deletes the Job too: retrying its Workload's creation would only fill the
    log (thousands of warnings for a large namespace) and load the API server until it is gone."""
    reconciler = JobReconciler(control_context(Store()))
    queue: WorkQueue[tuple[str, ...]] = WorkQueue()
    reconciler._failed(queue, "job", KEY, terminating())
    assert reconciler._backoffs == {}
    reconciler._failed(queue, "job", KEY, ApiError(status=500, reason="InternalError", message="etcd"))
    assert reconciler._backoffs[("job", *KEY)].attempt == 1
