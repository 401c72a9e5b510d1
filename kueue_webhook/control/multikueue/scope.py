"""What MultiKueue concerns on the manager: which AdmissionChecks are its own, which Workloads carry one,
which worker clusters those checks use, and which kinds are copied to the workers.

The dispatcher, the garbage collection and the worker watches all ask these questions of the same store and
configuration; answering them in one place keeps their answers the same.
"""

from __future__ import annotations

from typing import Any

from kueue_webhook.api.config import Configuration
from kueue_webhook.api.multikueue import MULTIKUEUE_CONTROLLER, dispatchable
from kueue_webhook.control.cache.store import Store, key_of
from kueue_webhook.control.kube.kinds import ADMISSION_CHECKS, JOBS, WORKLOADS, Kind, kind_of
from kueue_webhook.control.multikueue.pod_copies import workload_owner
from kueue_webhook.control.multikueue.workers import WorkerClusters

JSON = dict[str, Any]


def multikueue_checks(store: Store) -> set[str]:
    """The names of the AdmissionChecks served by MultiKueue (``spec.controllerName``)."""
    return {
        key_of(check)[1]
        for check in store.items(ADMISSION_CHECKS)
        if (check.get("spec") or {}).get("controllerName") == MULTIKUEUE_CONTROLLER
    }


def check_of(store: Store, workload: JSON) -> str | None:
    """The name of the Workload's MultiKueue check, if its status lists one."""
    states = (workload.get("status") or {}).get("admissionChecks") or []
    if not states:
        return None
    checks = multikueue_checks(store)
    for state in states:
        if isinstance(state, dict) and state.get("name") in checks:
            return str(state["name"])
    return None


def clusters_in_use(store: Store, workers: WorkerClusters) -> list[str]:
    """Every worker cluster a MultiKueue check's config lists, by name."""
    out: set[str] = set()
    for check in multikueue_checks(store):
        out.update(workers.clusters_for(check) or ())
    return sorted(out)


def copy_kinds(configuration: Configuration) -> list[Kind]:
    """The kinds this manager may have copies of in a worker: Workloads, Jobs, and every enabled
    integration Kueue has a MultiKueue adapter for."""
    kinds = [WORKLOADS, JOBS]
    for integration in configuration.integrations:
        if dispatchable(integration.group, integration.kind) and kind_of(integration) not in kinds:
            kinds.append(kind_of(integration))
    return kinds


def workload_kind(configuration: Configuration, workload: JSON) -> Kind | None:
    """The dispatched kind the Workload is for (``workload_owner``'s); None when Kueue has no adapter for
    it."""
    return owner_kind(configuration, workload_owner(workload))


def owner_kind(configuration: Configuration, owner: JSON | None) -> Kind | None:
    if owner is None:
        return None
    api_version = str(owner.get("apiVersion", ""))
    group = api_version.split("/")[0] if "/" in api_version else ""
    if not dispatchable(group, str(owner.get("kind", ""))):
        return None
    integration = configuration.integrations.for_kind(group, str(owner.get("kind", "")))
    return kind_of(integration) if integration is not None else None
