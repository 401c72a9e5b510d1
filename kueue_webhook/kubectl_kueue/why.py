"""``kubectl kueue why``: one report of why a Workload waits, built from the objects as read (plain dicts).

What a user otherwise assembles from three commands: the Workload behind their Job (its state and Kueue's own
reason and message, from the QuotaReserved, Admitted, Evicted and Finished conditions), where it stands in
line (the visibility API's ``positionInClusterQueue`` and ``positionInLocalQueue``, counted from 0 as Kueue
counts them: 0 is the next to be considered), what its ClusterQueue has in use against its quota per flavor
and resource (``status.flavorsUsage``/``flavorsReservation`` against ``nominalQuota``/``borrowingLimit``), and
an estimated start (``kueue_webhook.kubectl_kueue.estimate``). A part that could not be read (RBAC) is
reported as
such rather than left out silently. ``report`` gives the dict ``-o json|yaml`` prints; ``render`` the text.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from kueue_webhook.kubectl_kueue.columns import condition, is_true, workload_status
from kueue_webhook.kubectl_kueue.estimate import Estimate
from kueue_webhook.kubectl_kueue.output import paint
from kueue_webhook.kubectl_kueue.table import human_duration, render_table

__all__ = ["CONDITIONS", "Subject", "blocking", "quota_rows", "render", "report"]

JSON = Mapping[str, Any]
#: the conditions whose reason and message say where a Workload is, in the order they are shown
CONDITIONS = ("QuotaReserved", "Admitted", "Evicted", "Preempted", "Requeued", "PodsReady", "Finished")
_QUOTA_COLUMNS = ("Flavor", "Resource", "Usage", "Reserved", "Nominal Quota", "Borrowing Limit", "Borrowed")


class Subject(dict[str, str]):
    """The object asked about: ``kind``, ``name``, ``namespace`` (a Workload asked about directly too)."""


def _meta(obj: JSON) -> JSON:
    meta = obj.get("metadata")
    return meta if isinstance(meta, Mapping) else {}


def blocking(workload: JSON) -> tuple[str, str]:
    """(reason, message) in Kueue's words: the condition that says what the Workload waits for now."""
    if is_true(workload, "Finished"):
        cond = condition(workload, "Finished") or {}
    elif is_true(workload, "Admitted"):
        cond = condition(workload, "Admitted") or {}
    elif is_true(workload, "QuotaReserved"):  # reserved, waiting for admission checks
        cond = condition(workload, "Admitted") or condition(workload, "QuotaReserved") or {}
    elif is_true(workload, "Evicted") and not condition(workload, "QuotaReserved"):
        cond = condition(workload, "Evicted") or {}
    else:
        cond = condition(workload, "QuotaReserved") or condition(workload, "Evicted") or {}
    if not cond and (workload.get("spec") or {}).get("active") is False:
        return "Deactivated", "spec.active is false: the Workload was stopped (kubectl kueue resume workload)"
    if not cond:
        return "", "no condition yet: the controller has not looked at it (is it running?)"
    return str(cond.get("reason", "")), str(cond.get("message", ""))


def quota_rows(cluster_queue: JSON) -> list[dict[str, Any]]:
    """Per flavor and resource of the spec: usage, reservation and borrowing against the quota."""

    def by_flavor(field: str) -> dict[tuple[str, str], JSON]:
        out: dict[tuple[str, str], JSON] = {}
        for flavor in (cluster_queue.get("status") or {}).get(field) or []:
            for resource in flavor.get("resources") or []:
                out[(str(flavor.get("name", "")), str(resource.get("name", "")))] = resource
        return out

    usage, reservation = by_flavor("flavorsUsage"), by_flavor("flavorsReservation")
    rows = []
    for group in (cluster_queue.get("spec") or {}).get("resourceGroups") or []:
        for flavor in group.get("flavors") or []:
            for resource in flavor.get("resources") or []:
                key = (str(flavor.get("name", "")), str(resource.get("name", "")))
                used, reserved = usage.get(key, {}), reservation.get(key, {})
                rows.append(
                    {
                        "flavor": key[0],
                        "resource": key[1],
                        "usage": str(used.get("total", "0")),
                        "reserved": str(reserved.get("total", used.get("total", "0"))),
                        "nominalQuota": str(resource.get("nominalQuota", "0")),
                        "borrowingLimit": None
                        if resource.get("borrowingLimit") is None
                        else str(resource["borrowingLimit"]),
                        "lendingLimit": None
                        if resource.get("lendingLimit") is None
                        else str(resource["lendingLimit"]),
                        "borrowed": str(used.get("borrowed", "0")),
                    }
                )
    return rows


def _conditions(workload: JSON) -> list[dict[str, str]]:
    out = []
    for kind in CONDITIONS:
        cond = condition(workload, kind)
        if cond is not None:
            out.append({key: str(cond.get(key, "")) for key in ("type", "status", "reason", "message")})
    return out


def _estimate(estimate: Estimate | None, note: str, now: datetime) -> dict[str, Any]:
    if estimate is None:
        return {"at": None, "unknown": note or "not estimated", "assumption": None}
    at = estimate.start
    return {
        "at": at.strftime("%Y-%m-%dT%H:%M:%SZ") if at else None,
        "in": human_duration((at - now).total_seconds()) if at else None,
        "unknown": estimate.unknown or None,
        "assumption": estimate.assumption,
        "replayed": {
            "admitted": estimate.admitted,
            "pending": estimate.pending,
            "withoutMaximumExecutionTime": estimate.without_limit,
        },
    }


def report(
    subject: Subject,
    workload: JSON,
    *,
    local_queue: JSON | None,
    cluster_queue: JSON | None,
    cluster_queue_name: str,
    position: JSON | None,
    estimate: Estimate | None,
    now: datetime,
    notes: Sequence[str] = (),
    estimate_note: str = "",
) -> dict[str, Any]:
    """The report as data (what ``-o json|yaml`` prints)."""
    meta = _meta(workload)
    status = workload_status(workload)
    reason, message = blocking(workload)
    spec = workload.get("spec") or {}
    out: dict[str, Any] = {
        "object": dict(subject),
        "workload": {
            "name": str(meta.get("name", "")),
            "namespace": str(meta.get("namespace", "")),
            "status": status,
            "active": spec.get("active") is not False,
            "priority": spec.get("priority", 0),
            "localQueue": str(spec.get("queueName", "")),
            "clusterQueue": cluster_queue_name,
        },
        "reason": reason,
        "message": message,
        "conditions": _conditions(workload),
        "position": None
        if position is None
        else {
            "positionInClusterQueue": position.get("positionInClusterQueue"),
            "positionInLocalQueue": position.get("positionInLocalQueue"),
        },
    }
    if cluster_queue is not None:
        cq_spec = cluster_queue.get("spec") or {}
        out["clusterQueue"] = {
            "name": cluster_queue_name,
            "cohort": str(cq_spec.get("cohortName", "")),
            "active": is_true(cluster_queue, "Active"),
            "stopPolicy": str(cq_spec.get("stopPolicy", "None")),
            "pendingWorkloads": int((cluster_queue.get("status") or {}).get("pendingWorkloads") or 0),
            "admittedWorkloads": int((cluster_queue.get("status") or {}).get("admittedWorkloads") or 0),
            "resources": quota_rows(cluster_queue),
        }
    if local_queue is not None:
        lq_spec = local_queue.get("spec") or {}
        out["localQueue"] = {
            "name": str(_meta(local_queue).get("name", "")),
            "stopPolicy": str(lq_spec.get("stopPolicy", "None")),
            "active": is_true(local_queue, "Active"),
        }
    if status == "pending":
        out["estimatedStart"] = _estimate(estimate, estimate_note, now)
    out["notes"] = list(notes)
    return out


def _line(label: str, value: str) -> str:
    return f"{label + ':':<16} {value}"


def render(data: Mapping[str, Any], *, colour: bool = False) -> str:
    """The report as text for a person."""
    subject, workload = data["object"], data["workload"]
    lines = []
    where = f"{subject['namespace']}/{subject['name']}" if subject.get("namespace") else subject["name"]
    head = f"{subject['kind']} {where}"
    if subject["kind"] != "Workload":
        head += f" -> Workload {workload['name']}"
    lines.append(paint(head, "bold", colour))
    state = workload["status"].upper()
    state_colour = {"PENDING": "yellow", "FINISHED": "dim"}.get(state, "green")
    if not workload["active"]:
        state += " (stopped: spec.active=false)"
        state_colour = "red"
    lines.append(_line("Status", paint(state, state_colour, colour)))
    lines.append(
        _line(
            "Queue",
            f"LocalQueue {workload['localQueue'] or '-'} -> ClusterQueue {workload['clusterQueue'] or '-'}",
        )
    )
    if data["reason"] or data["message"]:
        lines.append(_line("Reason", data["reason"] or "-"))
        lines.append(_line("Message", data["message"] or "-"))
    position = data.get("position")
    if position is not None:
        lines.append(
            _line(
                "Position",
                f"{position['positionInClusterQueue']} in ClusterQueue, "
                f"{position['positionInLocalQueue']} in LocalQueue "
                "(counted from 0: 0 is the next to be considered)",
            )
        )
    elif workload["status"] == "pending":
        lines.append(_line("Position", "not in the visibility API's answer (see notes)"))
    cq = data.get("clusterQueue")
    if cq is not None:
        flags = ["Active" if cq["active"] else paint("not Active", "red", colour)]
        if cq["stopPolicy"] not in ("", "None"):
            flags.append(paint(f"stopPolicy {cq['stopPolicy']}", "red", colour))
        cohort = f"cohort {cq['cohort']}" if cq["cohort"] else "no cohort"
        lines.append("")
        lines.append(
            f"ClusterQueue {cq['name']} ({cohort}, {', '.join(flags)}): "
            f"{cq['admittedWorkloads']} admitted, {cq['pendingWorkloads']} pending"
        )
        rows = [
            [
                r["flavor"],
                r["resource"],
                r["usage"],
                r["reserved"],
                r["nominalQuota"],
                r["borrowingLimit"] if r["borrowingLimit"] is not None else "-",
                r["borrowed"],
            ]
            for r in cq["resources"]
        ]
        if rows:
            lines.extend("  " + line for line in render_table(_QUOTA_COLUMNS, rows).rstrip("\n").split("\n"))
    lq = data.get("localQueue")
    if lq is not None and lq["stopPolicy"] not in ("", "None"):
        lines.append(paint(f"LocalQueue {lq['name']} has stopPolicy {lq['stopPolicy']}", "red", colour))
    start = data.get("estimatedStart")
    if start is not None:
        lines.append("")
        if start["at"]:
            lines.append(_line("Estimated start", f"in about {start['in']} ({start['at']})"))
        else:
            lines.append(_line("Estimated start", f"unknown: {start['unknown']}"))
        if start.get("assumption"):
            lines.append(_line("Assuming", start["assumption"]))
    for note in data.get("notes") or []:
        lines.append(paint(f"Note: {note}", "dim", colour))
    return "\n".join(lines) + "\n"
