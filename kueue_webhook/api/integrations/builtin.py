"""The kinds Kueue integrates, described with Kueue's semantics (``pkg/controller/jobs/*``), under Kueue's
framework names so that a Kueue configuration's ``integrations.frameworks`` list works unchanged.

Each entry says what Kueue's Go code for that kind does: JobSet's pod sets are its replicatedJobs, each of
``replicas * min(parallelism, completions)`` pods (``podsCount``); a Kubeflow job has one pod set per replica
type present, in Kueue's fixed order, of ``replicas`` pods, suspended through ``spec.runPolicy.suspend``; a
RayCluster has a ``head`` pod set of one pod and one per worker group of ``replicas * numOfHosts`` pods, and a
RayJob adds KubeRay's submitter pod in ``K8sJobMode``; a RayCluster never finishes; queued Ray objects are
checked as Kueue's webhooks check them (``kueue_webhook.api.integrations.ray``). A plain Pod is one pod
set ``main`` of one pod, held by Kueue's scheduling gate, finished when Succeeded or Failed, active while
Running (Kueue's ``Pod.IsActive``) and ready with its Ready condition; pod groups are in ``pod_groups``.
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import partial
from typing import Any, Literal

from kueue_webhook.api.errors import FieldError
from kueue_webhook.api.integrations import appwrapper, ray, reclaimable, spark, trainjob
from kueue_webhook.api.integrations.model import (
    ActiveRule,
    CountFactor,
    FieldIs,
    FinishedRule,
    Integration,
    MinCount,
    PartialAdmission,
    PodSetInfos,
    PodSetSource,
    PodsReadyRule,
    Resolver,
    SchedulingGate,
    StagedStop,
)
from kueue_webhook.api.integrations.paths import FieldPath

__all__ = [
    "APPWRAPPER",
    "BUILTIN",
    "DEFAULT_FRAMEWORKS",
    "DEPLOYMENT",
    "JAXJOB",
    "JOB",
    "JOBSET",
    "KUEUE_FRAMEWORKS",
    "KUEUE_OWNER_TYPES",
    "LEADERWORKERSET",
    "MPIJOB",
    "PADDLEJOB",
    "POD",
    "PYTORCHJOB",
    "RAYCLUSTER",
    "RAYJOB",
    "RAYSERVICE",
    "SPARKAPPLICATION",
    "STATEFULSET",
    "TFJOB",
    "TRAINJOB",
    "XGBOOSTJOB",
]


def _p(text: str) -> FieldPath:
    return FieldPath(text.split("."))


_SPEC_SUSPEND = _p("spec.suspend")
_RUN_POLICY_SUSPEND = _p("spec.runPolicy.suspend")
_KUBEFLOW_PRIORITY = (_p("spec.runPolicy.schedulingPolicy.priorityClass"),)

JOB = Integration(
    name="batch/job",
    group="batch",
    version="v1",
    kind="Job",
    plural="jobs",
    suspend=_SPEC_SUSPEND,
    pod_sets=(
        PodSetSource(
            path=_p("spec"),
            name="main",
            template=_p("template"),
            count=(CountFactor(_p("parallelism"), 1, at_most=_p("completions")),),
            min_count=MinCount(annotation="kueue.x-k8s.io/job-min-parallelism", as_written=True),
        ),
    ),
    finished=FinishedRule(succeeded=("Complete",), failed=("Failed",)),
    active=ActiveRule(counts=(_p("status.active"),)),
    pods_ready=PodsReadyRule(
        ready=(_p("status.ready"), _p("status.succeeded"), _p("status.uncountedTerminatedPods.succeeded"))
    ),
    partial_admission=PartialAdmission(
        follow_annotation="kueue.x-k8s.io/job-completions-equal-parallelism",
        follow_fields=("completions",),
    ),
    staged_stop=StagedStop(annotation="kueue.x-k8s.io/stopping", start_time=_p("status.startTime")),
    reclaimable=reclaimable.job_reclaimable,
)

JOBSET = Integration(
    name="jobset.x-k8s.io/jobset",
    group="jobset.x-k8s.io",
    version="v1alpha2",
    kind="JobSet",
    plural="jobsets",
    suspend=_SPEC_SUSPEND,
    pod_sets=(
        PodSetSource(
            path=_p("spec.replicatedJobs"),
            each="list",
            name_field=_p("name"),
            template=_p("template.spec.template"),
            count=(
                CountFactor(_p("replicas"), 1),
                CountFactor(_p("template.spec.parallelism"), 1, at_most=_p("template.spec.completions")),
            ),
        ),
    ),
    finished=FinishedRule(succeeded=("Completed",), failed=("Failed",)),
    active=ActiveRule(counts=(_p("status.replicatedJobsStatus.*.active"),)),
    pods_ready=PodsReadyRule(
        ready=(_p("status.replicatedJobsStatus.*.ready"), _p("status.replicatedJobsStatus.*.succeeded")),
        total=(_p("spec.replicatedJobs.*.replicas"),),
    ),
    reclaimable=reclaimable.jobset_reclaimable,
)


def _kubeflow(
    name: str, kind: str, plural: str, specs: str, order: tuple[str, ...], version: str = "v1"
) -> Integration:
    """A Kubeflow training job: one pod set per replica type (Kueue's ``OrderedReplicaTypes``)."""
    return Integration(
        name=name,
        group="kubeflow.org",
        version=version,
        kind=kind,
        plural=plural,
        suspend=_RUN_POLICY_SUSPEND,
        pod_sets=(
            PodSetSource(
                path=_p(f"spec.{specs}"),
                each="map",
                order=order,
                template=_p("template"),
                count=(CountFactor(_p("replicas"), 1),),
            ),
        ),
        finished=FinishedRule(succeeded=("Succeeded",), failed=("Failed",)),
        active=ActiveRule(counts=(_p("status.replicaStatuses.*.active"),)),
        pods_ready=PodsReadyRule(conditions=("Running",)),
        priority_class=_KUBEFLOW_PRIORITY,
    )


PYTORCHJOB = _kubeflow(
    "kubeflow.org/pytorchjob", "PyTorchJob", "pytorchjobs", "pytorchReplicaSpecs", ("Master", "Worker")
)
TFJOB = _kubeflow(
    "kubeflow.org/tfjob",
    "TFJob",
    "tfjobs",
    "tfReplicaSpecs",
    ("Chief", "Master", "PS", "Worker", "Evaluator"),
)
MPIJOB = _kubeflow(
    "kubeflow.org/mpijob", "MPIJob", "mpijobs", "mpiReplicaSpecs", ("Launcher", "Worker"), version="v2beta1"
)
XGBOOSTJOB = _kubeflow(
    "kubeflow.org/xgboostjob", "XGBoostJob", "xgboostjobs", "xgbReplicaSpecs", ("Master", "Worker")
)
PADDLEJOB = _kubeflow(
    "kubeflow.org/paddlejob", "PaddleJob", "paddlejobs", "paddleReplicaSpecs", ("Master", "Worker")
)
#: a JAXJob has workers only (Kueue's ``OrderedReplicaTypes`` for it lists ``Worker`` alone)
JAXJOB = _kubeflow("kubeflow.org/jaxjob", "JAXJob", "jaxjobs", "jaxReplicaSpecs", ("Worker",))


def _ray_cluster_pod_sets(spec: str) -> tuple[PodSetSource, ...]:
    """Kueue's ``raycluster.BuildPodSets``: ``head`` (one pod), then each worker group."""
    return (
        PodSetSource(path=_p(f"{spec}.headGroupSpec"), name="head", template=_p("template")),
        PodSetSource(
            path=_p(f"{spec}.workerGroupSpecs"),
            each="list",
            name_field=_p("groupName"),
            template=_p("template"),
            count=(CountFactor(_p("replicas"), 1), CountFactor(_p("numOfHosts"), 1)),
        ),
    )


#: KubeRay's submitter pod when the RayJob gives none (Kueue's ``getSubmitterTemplate`` resources)
_DEFAULT_SUBMITTER: Mapping[str, object] = {
    "spec": {
        "restartPolicy": "Never",
        "containers": [
            {
                "name": "ray-job-submitter",
                "resources": {
                    "limits": {"cpu": "1", "memory": "1Gi"},
                    "requests": {"cpu": "500m", "memory": "200Mi"},
                },
            }
        ],
    }
}

RAYJOB = Integration(
    name="ray.io/rayjob",
    group="ray.io",
    version="v1",
    kind="RayJob",
    plural="rayjobs",
    suspend=_SPEC_SUSPEND,
    pod_sets=(
        *_ray_cluster_pod_sets("spec.rayClusterSpec"),
        PodSetSource(
            path=_p("spec"),
            name="submitter",
            template=_p("submitterPodTemplate"),
            default_template=_DEFAULT_SUBMITTER,
            only_if=FieldIs(_p("spec.submissionMode"), frozenset({"K8sJobMode"}), missing="K8sJobMode"),
        ),
    ),
    finished=FinishedRule(
        phase=_p("status.jobDeploymentStatus"),
        succeeded_phases=("Complete",),
        failed_phases=("Failed",),
        success=FieldIs(_p("status.jobStatus"), frozenset({"SUCCEEDED"})),
        message=_p("status.message"),
    ),
    # Kueue: active unless Suspended or New; an object no operator has touched yet has no pods either
    active=ActiveRule(
        when=FieldIs(
            _p("status.jobDeploymentStatus"),
            frozenset({"Initializing", "Running", "Complete", "Failed", "Suspending", "Retrying", "Waiting"}),
        )
    ),
    pods_ready=PodsReadyRule(when=FieldIs(_p("status.rayClusterStatus.state"), frozenset({"ready"}))),
    skip_when_set=(_p("spec.clusterSelector"),),
    value_rules=ray.rayjob_errors,
)

RAYCLUSTER = Integration(
    name="ray.io/raycluster",
    group="ray.io",
    version="v1",
    kind="RayCluster",
    plural="rayclusters",
    suspend=_SPEC_SUSPEND,
    pod_sets=_ray_cluster_pod_sets("spec"),
    finished=FinishedRule(),  # a RayCluster never finishes (Kueue's RayCluster.Finished)
    active=ActiveRule(when=FieldIs(_p("status.state"), frozenset({"ready"}))),
    pods_ready=PodsReadyRule(when=FieldIs(_p("status.state"), frozenset({"ready"}))),
    value_rules=ray.raycluster_errors,
)

#: a RayService is queued for its RayCluster spec and, like a RayCluster, never finishes: its quota goes
#: when it is deleted (Kueue's ``rayservice``); Ready is when it serves, active and ready alike
RAYSERVICE = Integration(
    name="ray.io/rayservice",
    group="ray.io",
    version="v1",
    kind="RayService",
    plural="rayservices",
    suspend=_p("spec.rayClusterConfig.suspend"),
    pod_sets=_ray_cluster_pod_sets("spec.rayClusterConfig"),
    finished=FinishedRule(),
    active=ActiveRule(conditions=("Ready",)),
    pods_ready=PodsReadyRule(conditions=("Ready",)),
    value_rules=ray.rayservice_errors,
)

#: a SparkApplication's pod sets are built from its ``driver`` and ``executor`` fields
#: (``kueue_webhook.api.integrations.spark``); the flavor goes into each role's own nodeSelector and
#: tolerations; it is done when its application state is, running while RUNNING, and ready once RUNNING with
#: as many executors running or completed as it asked for (Kueue's ``sparkapplication``)
_SPARK_STATE = _p("status.applicationState.state")
SPARKAPPLICATION = Integration(
    name="sparkoperator.k8s.io/sparkapplication",
    group="sparkoperator.k8s.io",
    version="v1beta2",
    kind="SparkApplication",
    plural="sparkapplications",
    suspend=_SPEC_SUSPEND,
    pod_sets=(
        PodSetSource(
            path=_p("spec.driver"),
            name="driver",
            build_template=spark.driver_template,
            scheduling=FieldPath(()),
        ),
        PodSetSource(
            path=_p("spec.executor"),
            name="executor",
            count=(CountFactor(_p("instances"), 0),),
            build_template=spark.executor_template,
            scheduling=FieldPath(()),
        ),
    ),
    finished=FinishedRule(
        phase=_SPARK_STATE,
        succeeded_phases=("COMPLETED",),
        failed_phases=("FAILED", "SUBMISSION_FAILED"),
        message=_p("status.applicationState.errorMessage"),
    ),
    active=ActiveRule(when=FieldIs(_SPARK_STATE, frozenset({"RUNNING"}))),
    pods_ready=PodsReadyRule(
        when=FieldIs(_SPARK_STATE, frozenset({"RUNNING"})),
        ready=(_p("status.executorState"),),
        total=(_p("spec.executor.instances"),),
        ready_states=frozenset({"RUNNING", "COMPLETED"}),
    ),
    value_rules=spark.value_errors,
)

#: an AppWrapper's pod sets are those of the objects it wraps (``kueue_webhook.api.integrations.appwrapper``),
#: named ``<name>-<index>``; the flavors go to its controller in ``podSetInfos``; it is running while its own
#: QuotaReserved condition holds, ready with its PodsReady condition, and finished in phase Succeeded or
#: Failed, a failed one only once it no longer has resources deployed (Kueue's ``appwrapper``)
APPWRAPPER = Integration(
    name="workload.codeflare.dev/appwrapper",
    group="workload.codeflare.dev",
    version="v1beta2",
    kind="AppWrapper",
    plural="appwrappers",
    suspend=_SPEC_SUSPEND,
    pod_sets=(
        PodSetSource(
            path=_p("spec.components"),
            expand=appwrapper.elements,
            count=(CountFactor(_p("replicas"), 1),),
            build_template=appwrapper.workload_template,
        ),
    ),
    finished=FinishedRule(
        phase=_p("status.phase"),
        succeeded_phases=("Succeeded",),
        failed_phases=("Failed",),
        failed_held_by=("ResourcesDeployed",),
        phase_messages=(("Succeeded", "AppWrapper finished successfully"), ("Failed", "AppWrapper failed")),
    ),
    active=ActiveRule(conditions=("QuotaReserved",)),
    pods_ready=PodsReadyRule(conditions=("PodsReady",)),
    pod_set_infos=PodSetInfos(appwrapper.write_pod_set_infos, appwrapper.clear_pod_set_infos),
)

#: a Kubeflow Trainer TrainJob's pod sets are the replicated jobs of the JobSet its training runtime and its
#: overrides make (``kueue_webhook.api.integrations.trainjob``), read from the resolved view; the flavors go
#: to the Trainer controller in Kueue's runtime patch; it is done with its Complete or Failed condition,
#: running while a job has active pods, and ready once every replicated job's jobs are ready or succeeded
#: (Kueue's ``trainjob``)
_TRAINJOB_JOBS = f"{trainjob.RUNTIME_VIEW}.replicatedJobs"
TRAINJOB = Integration(
    name="trainer.kubeflow.org/trainjob",
    group=trainjob.GROUP,
    version="v1alpha1",
    kind="TrainJob",
    plural="trainjobs",
    suspend=_SPEC_SUSPEND,
    pod_sets=(
        PodSetSource(
            path=_p(_TRAINJOB_JOBS),
            each="list",
            name_field=_p("name"),
            template=_p("template"),
            count=(CountFactor(_p("count"), 1),),
        ),
    ),
    finished=FinishedRule(succeeded=("Complete",), failed=("Failed",)),
    active=ActiveRule(counts=(_p("status.jobsStatus.*.active"),)),
    pods_ready=PodsReadyRule(
        ready=(_p("status.jobsStatus.*.ready"), _p("status.jobsStatus.*.succeeded")),
        total=(_p(f"{_TRAINJOB_JOBS}.*.replicas"),),
    ),
    pod_set_infos=PodSetInfos(
        trainjob.write_runtime_patch,
        trainjob.clear_runtime_patch,
        write_marked=trainjob.write_marked_runtime_patch,
    ),
    admitted_rules=trainjob.admitted_changes,
    resolver=Resolver(
        dependencies=(trainjob.CLUSTER_TRAINING_RUNTIMES, trainjob.TRAINING_RUNTIMES),
        resolve=trainjob.resolve,
        from_workload=trainjob.from_workload,
        refers_to=trainjob.refers_to,
    ),
    reclaimable=partial(reclaimable.trainjob_reclaimable, runtime_key=trainjob.RUNTIME_VIEW),
)

#: Kueue's scheduling gate, managed label and pod finalizer (``pkg/controller/jobs/pod/constants``)
ADMISSION_GATE = "kueue.x-k8s.io/admission"
MANAGED_LABEL = "kueue.x-k8s.io/managed"

POD = Integration(
    name="pod",
    group="",
    version="v1",
    kind="Pod",
    plural="pods",
    suspend=_p("spec.schedulingGates"),
    pod_sets=(PodSetSource(path=FieldPath(()), name="main", template=FieldPath(())),),
    finished=FinishedRule(
        phase=_p("status.phase"),
        succeeded_phases=("Succeeded",),
        failed_phases=("Failed",),
        message=_p("status.message"),
    ),
    active=ActiveRule(when=FieldIs(_p("status.phase"), frozenset({"Running"}))),
    pods_ready=PodsReadyRule(conditions=("Ready",)),
    gate=SchedulingGate(ADMISSION_GATE, finalizer=MANAGED_LABEL, managed_label=MANAGED_LABEL),
)


def _through_pods(name: str, kind: str, plural: str, how: Literal["pods", "group"]) -> Integration:
    """An apps/v1 kind Kueue queues through its pods (``pkg/controller/jobs/deployment``, ``statefulset``)."""
    return Integration(
        name=name,
        group="apps",
        version="v1",
        kind=kind,
        plural=plural,
        suspend=_p("spec.template.spec.schedulingGates"),
        pod_sets=(PodSetSource(path=_p("spec"), name="main", count=(CountFactor(_p("replicas"), 1),)),),
        finished=FinishedRule(),
        active=ActiveRule(),
        through_pods=how,
    )


DEPLOYMENT = _through_pods("deployment", "Deployment", "deployments", "pods")
STATEFULSET = _through_pods("statefulset", "StatefulSet", "statefulsets", "group")

#: Kueue's bound on a LeaderWorkerSet's ``spec.replicas``
_MAX_LWS_REPLICAS = 1_000_000


def _lws_replicas_errors(obj: Mapping[str, Any]) -> list[FieldError]:
    """Kueue's LeaderWorkerSet webhook: ``spec.replicas`` (1 when unset) within 0..1,000,000."""
    spec = obj.get("spec")
    count = spec.get("replicas", 1) if isinstance(spec, Mapping) else 1
    if not isinstance(count, int) or isinstance(count, bool) or 0 <= count <= _MAX_LWS_REPLICAS:
        return []
    bound = "must be >= 0" if count < 0 else f"must be <= {_MAX_LWS_REPLICAS}"
    return [
        FieldError.invalid("spec.replicas", count, f"invalid LeaderWorkerSet replicas: {bound}, got {count}")
    ]


#: a LeaderWorkerSet is queued through its pods, one group (and Workload) per replica, its leader and worker
#: templates marked (``kueue_webhook.api.integrations.leaderworkersets``); its pod set here is a group's
#: workers, for what reads an integration's pod sets
_LWT = _p("spec.leaderWorkerTemplate")
LEADERWORKERSET = Integration(
    name="leaderworkerset.x-k8s.io/leaderworkerset",
    group="leaderworkerset.x-k8s.io",
    version="v1",
    kind="LeaderWorkerSet",
    plural="leaderworkersets",
    suspend=_p("spec.leaderWorkerTemplate.workerTemplate.spec.schedulingGates"),
    pod_sets=(
        PodSetSource(
            path=_LWT, name="main", template=_p("workerTemplate"), count=(CountFactor(_p("size"), 1),)
        ),
    ),
    finished=FinishedRule(),
    active=ActiveRule(),
    through_pods="groups",
    pod_templates=(FieldPath((*_LWT, "leaderTemplate")), FieldPath((*_LWT, "workerTemplate"))),
    value_rules=_lws_replicas_errors,
)

#: every built-in entry by framework name
BUILTIN: Mapping[str, Integration] = {
    i.name: i
    for i in (
        JOB,
        JOBSET,
        PYTORCHJOB,
        TFJOB,
        MPIJOB,
        XGBOOSTJOB,
        PADDLEJOB,
        JAXJOB,
        RAYJOB,
        RAYCLUSTER,
        RAYSERVICE,
        SPARKAPPLICATION,
        APPWRAPPER,
        TRAINJOB,
        POD,
        DEPLOYMENT,
        STATEFULSET,
        LEADERWORKERSET,
    )
}

#: Kueue's default ``integrations.frameworks``
DEFAULT_FRAMEWORKS: tuple[str, ...] = ("batch/job",)

#: framework names Kueue knows but that are not implemented here (accepted in the list, with a warning)
KUEUE_FRAMEWORKS: frozenset[str] = frozenset()

#: ``(apiVersion, kind)`` of the kinds Kueue integrates that are not built in here: Kueue walks up through
#: them when looking for an object's queued owner (``isKnownOwner``), and so does this project (an external
#: framework of that kind is queued)
KUEUE_OWNER_TYPES: frozenset[tuple[str, str]] = frozenset(
    {
        # Kueue's interim owner between a Deployment and its pods, known without being listed
        ("apps/v1", "ReplicaSet"),
    }
)
