"""Server-side behaviour of the built-in kinds we serve: defaults, create-time fields, minimal validation.

kube-apiserver splits this into three steps and the split is observable: defaulting runs when the request is
decoded (the mutating webhook already sees `backoffLimit: 6`), while create-time preparation (a Job's
generated selector and controller-uid labels, uid, creationTimestamp) runs after mutating admission (the
validating webhook sees them, the mutating one does not). We keep the same two entry points so
AdmissionReviews look like the golden captures. Validation is limited to the rules our tests exercise;
everything else is accepted.
"""

from __future__ import annotations

import copy
from typing import Any

from tests.fakeapi.errors import ApiError, invalid

Obj = dict[str, Any]


def _image_pull_policy(image: str) -> str:
    """`Always` for an untagged or `:latest` image, else `IfNotPresent` (core/v1 SetDefaults_Container)."""
    if "@" in image:
        return "IfNotPresent"
    last = image.rsplit("/", 1)[-1]
    tag = last.split(":", 1)[1] if ":" in last else ""
    return "Always" if tag in ("", "latest") else "IfNotPresent"


def _default_container(container: Obj) -> None:
    container.setdefault("resources", {})
    container.setdefault("terminationMessagePath", "/dev/termination-log")
    container.setdefault("terminationMessagePolicy", "File")
    container.setdefault("imagePullPolicy", _image_pull_policy(str(container.get("image", ""))))


def default_pod_template(template: Obj) -> None:
    template.setdefault("metadata", {})
    spec = template.setdefault("spec", {})
    for key in ("initContainers", "containers"):
        for container in spec.get(key) or ():
            if isinstance(container, dict):
                _default_container(container)
    spec.setdefault("restartPolicy", "Always")
    spec.setdefault("terminationGracePeriodSeconds", 30)
    spec.setdefault("dnsPolicy", "ClusterFirst")
    spec.setdefault("securityContext", {})
    spec.setdefault("schedulerName", "default-scheduler")


def default_job(job: Obj) -> None:
    """batch/v1 SetDefaults_Job, as the golden job-create.json shows it."""
    spec = job.setdefault("spec", {})
    if spec.get("completions") is None and spec.get("parallelism") is None:
        spec["completions"] = 1
    spec.setdefault("parallelism", 1)
    if spec.get("backoffLimit") is None:
        spec["backoffLimit"] = 2147483647 if spec.get("backoffLimitPerIndex") is not None else 6
    spec.setdefault("completionMode", "NonIndexed")
    spec.setdefault("suspend", False)
    spec.setdefault("manualSelector", False)
    if "podReplacementPolicy" not in spec:
        spec["podReplacementPolicy"] = "Failed" if spec.get("podFailurePolicy") else "TerminatingOrFailed"
    default_pod_template(spec.setdefault("template", {}))
    job.setdefault("status", {})


def prepare_job_create(job: Obj) -> None:
    """Job strategy PrepareForCreate: selector and pod labels keyed by the new uid; labels copied if empty."""
    uid = job["metadata"]["uid"]
    name = job["metadata"]["name"]
    spec = job["spec"]
    template_meta = spec["template"].setdefault("metadata", {})
    if not spec.get("manualSelector"):
        labels = template_meta.setdefault("labels", {})
        labels.update(
            {
                "batch.kubernetes.io/controller-uid": uid,
                "batch.kubernetes.io/job-name": name,
                "controller-uid": uid,
                "job-name": name,
            }
        )
        spec["selector"] = {"matchLabels": {"batch.kubernetes.io/controller-uid": uid}}
    if not job["metadata"].get("labels") and template_meta.get("labels"):
        job["metadata"]["labels"] = dict(template_meta["labels"])
    job["status"] = {}


def default_namespace(namespace: Obj) -> None:
    name = namespace["metadata"].get("name", "")
    namespace["metadata"].setdefault("labels", {})["kubernetes.io/metadata.name"] = name
    namespace.setdefault("spec", {}).setdefault("finalizers", ["kubernetes"])
    namespace.setdefault("status", {}).setdefault("phase", "Active")


def default_secret(secret: Obj) -> None:
    """core/v1 SetDefaults_Secret: an empty type means Opaque."""
    if not secret.get("type"):
        secret["type"] = "Opaque"


def default_priority_class(priority_class: Obj) -> None:
    """scheduling/v1 SetDefaults_PriorityClass: preemptionPolicy PreemptLowerPriority."""
    if not priority_class.get("preemptionPolicy"):
        priority_class["preemptionPolicy"] = "PreemptLowerPriority"


def default_webhook_configuration(config: Obj) -> None:
    """admissionregistration/v1 defaults: Fail, Equivalent, timeout 10s, empty selectors, scope *."""
    for hook in config.get("webhooks") or ():
        hook.setdefault("failurePolicy", "Fail")
        hook.setdefault("matchPolicy", "Equivalent")
        hook.setdefault("namespaceSelector", {})
        hook.setdefault("objectSelector", {})
        hook.setdefault("timeoutSeconds", 10)
        if config.get("kind") == "MutatingWebhookConfiguration":
            hook.setdefault("reinvocationPolicy", "Never")
        for rule in hook.get("rules") or ():
            rule.setdefault("scope", "*")
        client = hook.get("clientConfig") or {}
        service = client.get("service")
        if isinstance(service, dict):
            service.setdefault("port", 443)


def validate_job(job: Obj) -> None:
    causes: list[dict[str, str]] = []
    spec = job.get("spec") or {}
    pod_spec = (spec.get("template") or {}).get("spec") or {}
    containers = pod_spec.get("containers")
    if not containers:
        causes.append(
            {
                "reason": "FieldValueRequired",
                "message": "Required value",
                "field": "spec.template.spec.containers",
            }
        )
    restart = pod_spec.get("restartPolicy")
    if restart not in ("Never", "OnFailure"):
        causes.append(
            {
                "reason": "FieldValueNotSupported",
                "message": f'Unsupported value: "{restart}": supported values: "OnFailure", "Never"',
                "field": "spec.template.spec.restartPolicy",
            }
        )
    for field in ("parallelism", "completions", "backoffLimit"):
        value = spec.get(field)
        if isinstance(value, int) and value < 0:
            causes.append(
                {
                    "reason": "FieldValueInvalid",
                    "message": f"Invalid value: {value}: must be greater than or equal to 0",
                    "field": f"spec.{field}",
                }
            )
    if causes:
        raise invalid(kind="Job", group="batch", name=job["metadata"].get("name", ""), causes=causes)


def validate_job_update(old: Obj, new: Obj) -> None:
    """Fields batch/v1 forbids changing: selector, completions, and the pod template unless suspended."""
    causes: list[dict[str, str]] = []
    old_spec, new_spec = old.get("spec") or {}, new.get("spec") or {}
    if old_spec.get("selector") != new_spec.get("selector"):
        causes.append(
            {"reason": "FieldValueInvalid", "message": "field is immutable", "field": "spec.selector"}
        )
    if old_spec.get("completions") != new_spec.get("completions"):
        causes.append(
            {"reason": "FieldValueInvalid", "message": "field is immutable", "field": "spec.completions"}
        )
    # kube-apiserver (pkg/registry/batch/job/strategy.go, validationOptionsForJob): the template's labels,
    # annotations and scheduling directives may change only while the stored Job is suspended and has never
    # started (no status.startTime; the Job controller clears it on suspension); nothing else of it ever.
    never_started = bool(old_spec.get("suspend")) and not (old.get("status") or {}).get("startTime")
    old_template, new_template = old_spec.get("template"), new_spec.get("template")
    if never_started:
        old_template, new_template = _fixed_template(old_template), _fixed_template(new_template)
    if old_template != new_template:
        causes.append(
            {"reason": "FieldValueInvalid", "message": "field is immutable", "field": "spec.template"}
        )
    if causes:
        raise invalid(kind="Job", group="batch", name=new["metadata"].get("name", ""), causes=causes)


def _fixed_template(template: Any) -> Any:
    """The part of a Job's pod template that never changes (ValidateJobSpecUpdate's mutable fields off)."""
    if not isinstance(template, dict):
        return template
    fixed = copy.deepcopy(template)
    metadata = fixed.get("metadata")
    if isinstance(metadata, dict):
        metadata.pop("labels", None)
        metadata.pop("annotations", None)
    spec = fixed.get("spec")
    if isinstance(spec, dict):
        for name in ("nodeSelector", "affinity", "tolerations", "schedulingGates"):
            spec.pop(name, None)
    return fixed


def validate_metadata_name(*, kind: str, group: str, obj: Obj) -> None:
    name = obj.get("metadata", {}).get("name")
    if not name:
        raise invalid(
            kind=kind,
            group=group,
            name="",
            causes=[
                {
                    "reason": "FieldValueRequired",
                    "message": "name or generateName is required",
                    "field": "metadata.name",
                }
            ],
        )


def require_dict(body: Any) -> Obj:
    if not isinstance(body, dict):
        raise ApiError(code=400, reason="BadRequest", message="the body of the request was not a JSON object")
    return body
