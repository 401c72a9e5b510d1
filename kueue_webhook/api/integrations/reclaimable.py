"""How many of a running object's pods will never run again, per pod set: its reclaimable pods.

A Job of 10 completions run 5 at a time needs only 3 pods once 7 have succeeded, yet its Workload was
admitted for 5. Kueue's job controller reports the difference in the Workload's ``status.reclaimablePods``
(its ``JobWithReclaimablePods`` interface) and its scheduler then charges the Workload for the pods that can
still run only, so the freed quota admits the next Workload while the last pods finish.

Each kind counts differently, so each is a small pure function of the object as the API server shows it
(for a TrainJob, the view with its runtime's replicated jobs, ``kueue_webhook.api.integrations.trainjob``),
named by the ``Integration`` that uses it. They return ``{pod set name: count}`` with only the pod sets that
have something to reclaim; the job controller bounds the counts to the pod set sizes before writing them
(Kueue's ``LimitReclaimablePodsToPodSetSizes``) and writes only a change.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

__all__ = [
    "bounded_to_pod_sets",
    "job_reclaimable",
    "jobset_reclaimable",
    "recorded_reclaimable",
    "terminal_index_count",
    "trainjob_reclaimable",
]

_INDEX = re.compile(r"\+?[0-9]{1,9}")


def _map(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _int(value: Any, default: int) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else default


def _index_interval(text: str) -> tuple[int, int] | None:
    """``"3"`` or ``"3-5"`` as inclusive bounds; None for anything else (a descending range too)."""
    first, dash, last = text.partition("-")
    if not _INDEX.fullmatch(first) or (dash and not _INDEX.fullmatch(last)):
        return None
    low = int(first)
    high = int(last) if dash else low
    return (low, high) if low <= high else None


def terminal_index_count(completed: str, failed: str, completions: int) -> int:
    """How many of an Indexed Job's indexes below ``completions`` are completed or failed for good, each
    counted once when listed in both (Kueue's ``terminalIndexesCount``: an index at or above
    ``completions`` was removed by a scale-down and is ignored; a malformed interval is skipped)."""
    if completions <= 0:
        return 0
    intervals: list[tuple[int, int]] = []
    for listing in (completed, failed):
        for text in listing.split(",") if listing else ():
            interval = _index_interval(text)
            if interval is not None and interval[0] <= min(interval[1], completions - 1):
                intervals.append((interval[0], min(interval[1], completions - 1)))
    count, last_counted = 0, -1
    for low, high in sorted(intervals):
        start = max(low, last_counted + 1)
        if start <= high:
            count += high - start + 1
            last_counted = high
    return count


def job_reclaimable(job: Mapping[str, Any]) -> dict[str, int]:
    """A batch Job (Kueue's ``Job.ReclaimablePods``): once some pods are done for good (``status.succeeded``,
    or for an Indexed Job its completed and permanently failed indexes) and fewer completions remain than
    ``parallelism``, the parallel slots no remaining completion needs. A single-pod Job reclaims nothing."""
    spec, status = _map(job.get("spec")), _map(job.get("status"))
    parallelism = _int(spec.get("parallelism"), 1)
    completions = _int(spec.get("completions"), parallelism)
    if spec.get("completionMode") == "Indexed":
        completed, failed = status.get("completedIndexes"), status.get("failedIndexes")
        terminal = terminal_index_count(
            completed if isinstance(completed, str) else "",
            failed if isinstance(failed, str) else "",
            completions,
        )
    else:
        terminal = _int(status.get("succeeded"), 0)
    if parallelism <= 1 or terminal <= 0:
        return {}
    remaining = max(completions - terminal, 0)
    return {"main": parallelism - remaining} if remaining < parallelism else {}


def _pods_per_replica(job_template_spec: Mapping[str, Any]) -> int:
    """A replicated job's pods per replica: its parallelism, capped by its completions (Kueue's
    ``PodsCountPerReplica``)."""
    parallelism = _int(job_template_spec.get("parallelism"), 1)
    completions = job_template_spec.get("completions")
    return min(parallelism, completions) if isinstance(completions, int) and completions >= 0 else parallelism


def _succeeded_replicas(
    replicated: Mapping[str, Any], succeeded: Mapping[str, int], pods_per_replica: int
) -> tuple[str, int] | None:
    name = str(replicated.get("name") or "")
    done = succeeded.get(name, 0)
    if done <= 0 or done > _int(replicated.get("replicas"), 1):
        return None
    return name, done * pods_per_replica


def jobset_reclaimable(jobset: Mapping[str, Any]) -> dict[str, int]:
    """A JobSet (Kueue's ``JobSet.ReclaimablePods``): the pods of every succeeded replica of a replicated job
    (``status.replicatedJobsStatus[].succeeded`` replicas times pods per replica), while that count of
    replicas is not above the spec's."""
    statuses = _map(jobset.get("status")).get("replicatedJobsStatus")
    succeeded = {
        str(s.get("name") or ""): _int(s.get("succeeded"), 0)
        for s in (statuses if isinstance(statuses, list) else ())
        if isinstance(s, Mapping)
    }
    out: dict[str, int] = {}
    replicated_jobs = _map(jobset.get("spec")).get("replicatedJobs")
    for replicated in replicated_jobs if isinstance(replicated_jobs, list) else ():
        if not isinstance(replicated, Mapping):
            continue
        job_spec = _map(_map(replicated.get("template")).get("spec"))
        found = _succeeded_replicas(replicated, succeeded, _pods_per_replica(job_spec))
        if found is not None:
            out[found[0]] = found[1]
    return out


def trainjob_reclaimable(view: Mapping[str, Any], runtime_key: str) -> dict[str, int]:
    """A TrainJob (Kueue's ``TrainJob.ReclaimablePods``): as a JobSet, from ``status.jobsStatus[].succeeded``
    and the replicated jobs of the JobSet it runs (the resolved view under ``runtime_key``, each with its
    ``replicas`` and ``count`` pods in all)."""
    statuses = _map(view.get("status")).get("jobsStatus")
    succeeded = {
        str(s.get("name") or ""): _int(s.get("succeeded"), 0)
        for s in (statuses if isinstance(statuses, list) else ())
        if isinstance(s, Mapping)
    }
    out: dict[str, int] = {}
    jobs = _map(view.get(runtime_key)).get("replicatedJobs")
    for replicated in jobs if isinstance(jobs, list) else ():
        if not isinstance(replicated, Mapping):
            continue
        replicas = max(_int(replicated.get("replicas"), 1), 1)
        per_replica = _int(replicated.get("count"), replicas) // replicas
        found = _succeeded_replicas(replicated, succeeded, per_replica)
        if found is not None:
            out[found[0]] = found[1]
    return out


def bounded_to_pod_sets(counts: Mapping[str, int], workload: Mapping[str, Any]) -> dict[str, int]:
    """Each count lowered to its pod set's size in the Workload (Kueue's
    ``LimitReclaimablePodsToPodSetSizes``), so a count derived from the object's status never breaks the
    Workload's rule that a pod set reclaims at most its own pods; a name the Workload has no pod set of is
    dropped, as the Workload's webhook would refuse it."""
    sizes = {
        str(p.get("name") or ""): _int(p.get("count"), 1)
        for p in _map(workload.get("spec")).get("podSets") or ()
        if isinstance(p, Mapping)
    }
    return {name: min(count, sizes[name]) for name, count in counts.items() if name in sizes and count > 0}


def recorded_reclaimable(workload: Mapping[str, Any]) -> dict[str, int]:
    """``status.reclaimablePods`` of a Workload as ``{pod set name: count}`` (zero counts left out: they
    reclaim nothing, as Kueue compares them)."""
    entries = _map(workload.get("status")).get("reclaimablePods")
    out: dict[str, int] = {}
    for entry in entries if isinstance(entries, list) else ():
        if isinstance(entry, Mapping):
            count = _int(entry.get("count"), 0)
            if count > 0:
                out[str(entry.get("name") or "")] = count
    return out
