"""``kueue-webhook simulate FILE...``: replay manifests and a job trace through the scheduler, no cluster.

The input is ordinary multi-document YAML, the same manifests ``kubectl apply`` takes: Namespaces (their
labels feed ClusterQueue ``namespaceSelector``s), ResourceFlavors, Cohorts, ClusterQueues, LocalQueues,
WorkloadPriorityClasses, and the trace itself as ``batch/v1`` Jobs and/or ``kueue.x-k8s.io`` Workloads.
Two annotations on a Job (or Workload) place it on the simulated clock:

``simulate.kueue-webhook/arrival``
    when it is submitted, as an offset from the start of the replay (``30s``, ``2m``, ``1h30m``,
    ``500ms``, or plain seconds); default ``0s``.
``simulate.kueue-webhook/runtime``
    how long it runs once admitted, after which it finishes and releases its quota; default: it never
    finishes within the replay.

Every object goes through the same parsing and validation as on a cluster and every decision through
the same ``kueue_webhook.core`` scheduler the controller runs, so what ``simulate`` prints is what the cluster
would do (admissions, pending reasons and messages, queue positions). Events at the same instant are
applied together, then scheduling cycles run until nothing more can be decided, exactly as the
controller reacts to a burst of watch events.

The report shows, at ``--at`` (default: when the last Job has arrived), a ``kubectl get workloads``-style
table with the pending message of each waiting workload, and per ClusterQueue the admitted and pending
counts, usage against nominal quota per flavor and resource, and the wait-time p50/p95 over the whole
replay. ``--output json`` prints the same for machines; ``--plot FILE.png`` draws usage over time per
ClusterQueue (needs the ``plot`` extra: matplotlib).

Preemption is simulated end to end: when the scheduler evicts a workload to make room, simulate plays
the owner at once (the Job stops, the reservation is cleared, the workload queues again and, when
admitted again, runs its whole runtime from the start). The report lists every preemption: when, who
was evicted from which ClusterQueue, for which workload, and Kueue's reason (``InClusterQueue``,
``InCohortReclamation``, ``InCohortReclaimWhileBorrowing``, ``InCohortFairSharing``, or a drain's
``ClusterQueueStopped``/``LocalQueueStopped``); the plot marks them. A ``kueue-webhook-config`` ConfigMap
in the input turns on what it turns on in a cluster (``fairSharing``), and the report then shows each
ClusterQueue's weighted share. Admission checks are assumed to pass at once (nobody approves on a
simulated clock), and ``scheduling.k8s.io`` PriorityClasses give Jobs their pod priority.

The package in four steps, each its own module: ``scenario`` (documents -> Scenario: objects, durations,
submissions), ``replay`` (the simulated clock through ``kueue_webhook.core``), ``report`` (text, JSON, plot)
and ``cli`` (the command: ``add_arguments``/``run``, which ``kueue_webhook.cli`` loads; this package's face
leaves it out, so the parts read by ``kubectl kueue`` do not bring the command along). ``--from-cluster``
replays the live cluster instead, as it is and with proposed quota edits: ``whatif`` (the edits and the
comparison, pure) and ``from_cluster`` (reading the cluster, the command). The rules themselves (parsing, a
Job's Workload and priority, scheduling) are the controller's, imported from ``kueue_webhook.api`` and
``kueue_webhook.core``.
"""

from __future__ import annotations

from kueue_webhook.simulate.replay import (
    DEFAULT_RESOLUTION,
    PreemptionRecord,
    Result,
    Snapshot,
    WorkloadRecord,
    replay,
)
from kueue_webhook.simulate.report import plot_usage, report_json, report_text
from kueue_webhook.simulate.scenario import (
    ARRIVAL_ANNOTATION,
    RUNTIME_ANNOTATION,
    Scenario,
    SimulationError,
    Submission,
    add_document,
    load_scenario,
    parse_duration,
    scenario_from_documents,
)

__all__ = [
    "ARRIVAL_ANNOTATION",
    "DEFAULT_RESOLUTION",
    "RUNTIME_ANNOTATION",
    "PreemptionRecord",
    "Result",
    "Scenario",
    "SimulationError",
    "Snapshot",
    "Submission",
    "WorkloadRecord",
    "add_document",
    "load_scenario",
    "parse_duration",
    "plot_usage",
    "replay",
    "report_json",
    "report_text",
    "scenario_from_documents",
]
