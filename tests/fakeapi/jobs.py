"""What the Job controller writes to a Job's status, since no pods ever run here.

The fake has no kubelet and no pods, so Jobs never progress by themselves. Two things are emulated because
queue controllers depend on them: the `Suspended` condition and `startTime`/`active` bookkeeping that the real
Job controller writes when `spec.suspend` flips, and, on a test's request (`FakeApi.complete_job`), the
terminal conditions Kubernetes v1.36 writes: `SuccessCriteriaMet` then `Complete` (reason
`CompletionsReached`), or `FailureTarget` then `Failed` (reason `BackoffLimitExceeded`), with counts and
`completionTime`.
"""

from __future__ import annotations

import copy
from typing import Any

from tests.fakeapi.store import now_rfc3339

Obj = dict[str, Any]
#: the Job controller's own ``spec.managedBy`` value (the default)
JOB_CONTROLLER = "kubernetes.io/job-controller"


def _condition(type_: str, status: str, reason: str, message: str, now: str) -> Obj:
    return {
        "type": type_,
        "status": status,
        "lastProbeTime": now,
        "lastTransitionTime": now,
        "reason": reason,
        "message": message,
    }


def is_finished(job: Obj) -> bool:
    return any(
        c.get("type") in ("Complete", "Failed") and c.get("status") == "True"
        for c in (job.get("status") or {}).get("conditions") or []
    )


def job_controller_status(job: Obj) -> Obj | None:
    """The status the Job controller converges to for this spec, or None when it would not touch it (a
    finished Job, or one whose ``spec.managedBy`` names another controller, which it skips as v1.32+ does)."""
    if is_finished(job):
        return None
    if (job.get("spec") or {}).get("managedBy", JOB_CONTROLLER) != JOB_CONTROLLER:
        return None
    old = job.get("status") or {}
    status = copy.deepcopy(old)
    conditions: list[Obj] = status.get("conditions") or []
    suspended = next((c for c in conditions if c.get("type") == "Suspended"), None)
    now = now_rfc3339()
    spec = job.get("spec") or {}
    if spec.get("suspend"):
        if suspended is None or suspended.get("status") != "True":
            conditions = [c for c in conditions if c.get("type") != "Suspended"]
            conditions.append(_condition("Suspended", "True", "JobSuspended", "Job suspended", now))
        status.pop("startTime", None)
        status.pop("active", None)
    else:
        if suspended is not None and suspended.get("status") == "True":
            conditions = [c for c in conditions if c.get("type") != "Suspended"]
            conditions.append(_condition("Suspended", "False", "JobResumed", "Job resumed", now))
        status.setdefault("startTime", now)
        remaining = int(spec.get("completions") or spec.get("parallelism") or 1) - int(
            status.get("succeeded", 0)
        )
        active = max(0, min(int(spec.get("parallelism", 1)), remaining))
        if active:
            status["active"] = active
        else:
            status.pop("active", None)
    if conditions:
        status["conditions"] = conditions
    status["terminating"] = 0
    status.setdefault("uncountedTerminatedPods", {})
    status["ready"] = 0
    return status


def finished_status(job: Obj, *, succeeded: bool) -> Obj:
    """Terminal status as the v1.36 Job controller writes it (interim condition first, then the final one)."""
    status = copy.deepcopy(job.get("status") or {})
    spec = job.get("spec") or {}
    now = now_rfc3339()
    conditions: list[Obj] = [c for c in status.get("conditions") or [] if c.get("type") == "Suspended"]
    status.setdefault("startTime", now)
    status.pop("active", None)
    status["ready"] = 0
    status["terminating"] = 0
    status["uncountedTerminatedPods"] = {}
    if succeeded:
        message = "Reached expected number of succeeded pods"
        conditions.append(_condition("SuccessCriteriaMet", "True", "CompletionsReached", message, now))
        conditions.append(_condition("Complete", "True", "CompletionsReached", message, now))
        status["succeeded"] = int(spec.get("completions") or spec.get("parallelism") or 1)
        status["completionTime"] = now
    else:
        message = "Job has reached the specified backoff limit"
        conditions.append(_condition("FailureTarget", "True", "BackoffLimitExceeded", message, now))
        conditions.append(_condition("Failed", "True", "BackoffLimitExceeded", message, now))
        status["failed"] = int(spec.get("backoffLimit", 6)) + 1
    status["conditions"] = conditions
    return status
