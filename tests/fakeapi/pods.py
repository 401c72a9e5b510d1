"""core/v1 Pods as kube-apiserver stores them, with no scheduler or kubelet behind them.

Queue controllers hold a pod back with a scheduling gate and release it by removing the gate, setting the
flavor's nodeSelector and tolerations in the same write; kube-apiserver allows exactly that much of a pod
spec to change (PodSchedulingReadiness, pkg/apis/core/validation ValidatePodUpdate): gates may only be
removed, tolerations only added, and, while the pod is gated, its nodeSelector only added to. Those rules are
checked here with the apiserver's words and in its order (``validateOnlyAddedTolerations``,
``validateOnlyDeletedSchedulingGates``, ``validateNodeSelectorMutation``, then the rest of the spec, as the
golden ``pod-update-*`` captures show), so a controller that breaks them fails here as it would on a
cluster. Other changes to the spec are refused with the apiserver's message without the diff of the internal
PodSpec it appends. Pods never run: tests write their phase and conditions through ``pods/status`` as a
kubelet (or a controller's ``TerminationTarget``) would.
"""

from __future__ import annotations

import json
from typing import Any

from tests.fakeapi.builtins import default_pod_template
from tests.fakeapi.errors import invalid
from tests.fakeapi.store import now_rfc3339

Obj = dict[str, Any]

#: what the DefaultTolerationSeconds admission plugin (on by default) adds to every pod on create
DEFAULT_TOLERATIONS = (
    {
        "key": "node.kubernetes.io/not-ready",
        "operator": "Exists",
        "effect": "NoExecute",
        "tolerationSeconds": 300,
    },
    {
        "key": "node.kubernetes.io/unreachable",
        "operator": "Exists",
        "effect": "NoExecute",
        "tolerationSeconds": 300,
    },
)

#: the spec fields ValidatePodUpdate lets change (containers' images aside), each checked by its own rule
_UPDATABLE = ("activeDeadlineSeconds", "tolerations", "schedulingGates", "terminationGracePeriodSeconds")

_UPDATE_FORBIDDEN = (
    "pod updates may not change fields other than `spec.containers[*].image`,`spec.initContainers[*].image`,"
    "`spec.activeDeadlineSeconds`,`spec.tolerations` (only additions to existing tolerations),"
    "`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was previously negative)"
)


def default_pod(pod: Obj) -> None:
    """core/v1 SetDefaults_Pod and SetDefaults_PodSpec for the fields our tests read; a condition's times are
    never omitted (``metav1.Time`` serialises an unset time as ``null``)."""
    default_pod_template(pod)
    pod["spec"].setdefault("enableServiceLinks", True)
    pod["spec"].setdefault("priority", 0)
    pod["spec"].setdefault("preemptionPolicy", "PreemptLowerPriority")
    for condition in (pod.get("status") or {}).get("conditions") or ():
        if isinstance(condition, dict):
            condition.setdefault("lastProbeTime", None)
            condition.setdefault("lastTransitionTime", None)


def admit_pod_create(pod: Obj) -> None:
    """The DefaultTolerationSeconds plugin: tolerate not-ready/unreachable nodes for 300 s unless the pod
    already tolerates them (built-in admission runs before the webhooks, so they see the tolerations)."""
    tolerations = pod["spec"].setdefault("tolerations", [])
    for default in DEFAULT_TOLERATIONS:
        if not any(
            t.get("key") == default["key"] and t.get("effect") in (None, "", "NoExecute") for t in tolerations
        ):
            tolerations.append(dict(default))


def _qos_class(spec: Obj) -> str:
    requests_or_limits = False
    guaranteed = True
    for container in spec.get("containers") or ():
        resources = container.get("resources") or {}
        limits, requests = resources.get("limits") or {}, resources.get("requests") or {}
        requests_or_limits = requests_or_limits or bool(limits or requests)
        for resource in ("cpu", "memory"):
            if resource not in limits or requests.get(resource, limits[resource]) != limits[resource]:
                guaranteed = False
    if not requests_or_limits:
        return "BestEffort"
    return "Guaranteed" if guaranteed else "Burstable"


def prepare_pod_create(pod: Obj) -> None:
    """Pod strategy PrepareForCreate: the status is the server's, Pending until a kubelet says more; a pod
    created with scheduling gates is ``PodScheduled=False`` ``SchedulingGated`` (golden pod-create-gated)."""
    pod["status"] = {"phase": "Pending", "qosClass": _qos_class(pod["spec"])}
    if pod["spec"].get("schedulingGates"):
        pod["status"]["conditions"] = [
            {
                "type": "PodScheduled",
                "status": "False",
                "lastProbeTime": None,
                "lastTransitionTime": now_rfc3339(),
                "reason": "SchedulingGated",
                "message": "Scheduling is blocked due to non-empty scheduling gates",
            }
        ]


def validate_pod(pod: Obj) -> None:
    if not (pod.get("spec") or {}).get("containers"):
        raise invalid(
            kind="Pod",
            group="",
            name=pod["metadata"].get("name", ""),
            causes=[
                {"reason": "FieldValueRequired", "message": "Required value", "field": "spec.containers"}
            ],
        )


def _gate_names(spec: Obj) -> list[str]:
    return [str(g.get("name")) for g in spec.get("schedulingGates") or ()]


def _sans_seconds(toleration: Obj) -> Obj:
    return {k: v for k, v in toleration.items() if k != "tolerationSeconds"}


def validate_pod_update(old: Obj, new: Obj) -> None:
    """ValidatePodUpdate's rules for the fields a queue controller writes, in its order and words."""
    causes: list[dict[str, str]] = []
    old_spec, new_spec = old.get("spec") or {}, new.get("spec") or {}
    new_tolerations = new_spec.get("tolerations") or []
    for toleration in old_spec.get("tolerations") or []:
        if not any(_sans_seconds(t) == _sans_seconds(toleration) for t in new_tolerations):
            causes.append(
                {
                    "reason": "FieldValueForbidden",
                    "message": "Forbidden: existing toleration can not be modified except its "
                    "tolerationSeconds",
                    "field": "spec.tolerations",
                }
            )
            break
    old_gates = set(_gate_names(old_spec))
    for index, gate in enumerate(_gate_names(new_spec)):
        if gate not in old_gates:
            causes.append(
                {
                    "reason": "FieldValueForbidden",
                    "message": f"Forbidden: only deletion is allowed, but found new scheduling gate '{gate}'",
                    "field": f"spec.schedulingGates[{index}].name",
                }
            )
    skip = set(_UPDATABLE)
    if old_spec.get("schedulingGates"):
        # a gated pod may gain nodeSelector entries, never lose or change them; its node affinity may change
        # (the apiserver allows only additions there too: not modelled)
        skip |= {"nodeSelector", "affinity"}
        old_selector = old_spec.get("nodeSelector") or {}
        new_selector = new_spec.get("nodeSelector") or {}
        if any(new_selector.get(key) != value for key, value in old_selector.items()):
            # Go prints the new map as JSON, an absent one as null
            shown = json.dumps(new_spec.get("nodeSelector"), separators=(",", ":"), sort_keys=True)
            causes.append(
                {
                    "reason": "FieldValueInvalid",
                    "message": f"Invalid value: {shown}: only additions to spec.nodeSelector are allowed "
                    "(no mutations or deletions)",
                    "field": "spec.nodeSelector",
                }
            )

    def rest(spec: Obj) -> Obj:
        kept = {k: v for k, v in spec.items() if k not in skip}
        for key in ("containers", "initContainers"):
            if key in kept:
                kept[key] = [{k: v for k, v in c.items() if k != "image"} for c in kept[key]]
        return kept

    if rest(old_spec) != rest(new_spec):
        causes.append(
            {"reason": "FieldValueForbidden", "message": f"Forbidden: {_UPDATE_FORBIDDEN}", "field": "spec"}
        )
    if causes:
        raise invalid(kind="Pod", group="", name=new["metadata"].get("name", ""), causes=causes)
