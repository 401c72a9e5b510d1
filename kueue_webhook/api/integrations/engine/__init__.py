"""One pure engine for every integration: read a queued object's pod sets, build its Workload, and build the
JSON Patches that suspend, start and stop it, all from its ``Integration`` description. This package is
the engine's interface; its parts are ``reading`` (metadata, queue, Workload name), ``pod_sets``,
``priority``, ``workload`` (the Workload built from them), ``patches`` and ``status``.

This is Kueue's ``GenericJob`` contract turned into functions of (description, object): ``pod_sets`` is
``PodSets``, ``start_patch`` is ``RunWithPodSetsInfo`` (suspend cleared; each admitted flavor's ``nodeLabels``
merged into that pod set's ``nodeSelector``, its tolerations appended), ``stop_patches`` is ``Suspend`` plus
``RestorePodSetsInfo`` (the templates put back as the Workload recorded them before admission, matched by
position as Kueue does, and left alone when the pod set count no longer matches), ``finished``,
``has_active_pods`` and ``pods_ready`` are ``Finished``, ``IsActive`` and ``PodsReady``. Workload names are
Kueue's ``GetWorkloadNameForOwnerWithGVK``: ``<kind>-<name>`` cut to 247 characters, ``-``, then 5 hex of the
SHA-1 of kind, group, name and UID, so Kueue and this controller name the same object's Workload alike.

A kind held by a scheduling gate (a Pod) is the same contract with other writes
(``kueue_webhook.api.integrations.suspension``): it is suspended while the gate is in
``spec.schedulingGates``,
suspending adds the gate (only ever on create), starting removes it and injects the flavors into the pod's
own spec, and stopping is a deletion (``stops_by_deletion``).

Starting a patch with a ``test`` that the object is still suspended makes a start built from a stale view
fail (422) instead of starting an object twice.
"""

from __future__ import annotations

from kueue_webhook.api.integrations.engine.patches import (
    FlavorConflict,
    is_stopping,
    is_suspended,
    own_finalizer,
    restore_ops,
    start_patch,
    start_time_blocks_restore,
    stop_patches,
    stops_by_deletion,
    suspend_ops,
    suspend_written,
)
from kueue_webhook.api.integrations.engine.pod_sets import (
    Element,
    accepts_partial_admission,
    element_count,
    element_min_count,
    elements,
    min_count,
    pod_count,
    pod_sets,
    written_min_count,
)
from kueue_webhook.api.integrations.engine.priority import (
    NO_CLASSES,
    PriorityClasses,
    missing_class,
    priority,
)
from kueue_webhook.api.integrations.engine.reading import (
    JOB_UID_LABEL,
    MAX_EXEC_TIME_LABEL,
    PRIORITY_CLASS_LABEL,
    QUEUE_NAME_LABEL,
    maximum_execution_time,
    parse_go_bool,
    parse_go_int,
    queue_name,
    skipped,
    workload_name,
)
from kueue_webhook.api.integrations.engine.status import finished, has_active_pods, pods_ready
from kueue_webhook.api.integrations.engine.workload import workload_for

__all__ = [
    "JOB_UID_LABEL",
    "MAX_EXEC_TIME_LABEL",
    "NO_CLASSES",
    "PRIORITY_CLASS_LABEL",
    "QUEUE_NAME_LABEL",
    "Element",
    "FlavorConflict",
    "PriorityClasses",
    "accepts_partial_admission",
    "element_count",
    "element_min_count",
    "elements",
    "finished",
    "has_active_pods",
    "is_stopping",
    "is_suspended",
    "maximum_execution_time",
    "min_count",
    "missing_class",
    "own_finalizer",
    "parse_go_bool",
    "parse_go_int",
    "pod_count",
    "pod_sets",
    "pods_ready",
    "priority",
    "queue_name",
    "restore_ops",
    "skipped",
    "start_patch",
    "start_time_blocks_restore",
    "stop_patches",
    "stops_by_deletion",
    "suspend_ops",
    "suspend_written",
    "workload_for",
    "workload_name",
    "written_min_count",
]
