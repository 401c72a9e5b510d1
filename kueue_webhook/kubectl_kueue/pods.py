"""``kubectl kueue list pods --for TYPE[.GROUP]/NAME``: the Pods of a Job (or of any queued kind), as kueuectl
lists them.

kueuectl asks each integration for the label its pods carry (jobframework's ``JobWithPodLabelSelector``) and
lists Pods with it, added to ``-l``: a Job's ``batch.kubernetes.io/job-name``, a JobSet's (and a TrainJob's)
``jobset.sigs.k8s.io/jobset-name``, a Kubeflow job's ``training.kubeflow.org/job-name`` with its operator's
name, a RayCluster's ``ray.io/cluster`` (a RayJob's or RayService's cluster from its status), a
SparkApplication's ``sparkoperator.k8s.io/app-name``, and for ``pod/NAME`` the pod's group
(``kueue.x-k8s.io/pod-group-name``). A kind with no such label is ``unsupported kind``. The table is the API
server's own (``as=Table``: the columns ``kubectl get pods`` prints, ``-o wide`` for all of them); ``-o
json|yaml|name`` prints each Pod, as kueuectl's per-object printer does.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Mapping
from typing import Any, TextIO

from kueue_webhook.control.kube.kinds import Kind
from kueue_webhook.kubectl_kueue.arguments import UsageError
from kueue_webhook.kubectl_kueue.output import dump, name_line
from kueue_webhook.kubectl_kueue.reads import NotQueued, kind_for
from kueue_webhook.kubectl_kueue.session import Session
from kueue_webhook.kubectl_kueue.table import render_table

__all__ = ["TABLE", "list_pods_command", "pod_selector", "table_rows"]

JSON = Mapping[str, Any]
TABLE = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json"
_KUBEFLOW = "training.kubeflow.org"
_RAY_CLUSTER = "ray.io/cluster"


def _name(obj: JSON) -> str:
    return str((obj.get("metadata") or {}).get("name", ""))


def _dig(obj: JSON, *path: str) -> str:
    value: Any = obj
    for key in path:
        value = value.get(key) if isinstance(value, Mapping) else None
    return value if isinstance(value, str) else ""


def _kubeflow(operator: str) -> Callable[[JSON], str]:
    return lambda obj: f"{_KUBEFLOW}/job-name={_name(obj)},{_KUBEFLOW}/operator-name={operator}"


def _ray(*path: str) -> Callable[[JSON], str]:
    def selector(obj: JSON) -> str:
        cluster = _dig(obj, *path)
        return f"{_RAY_CLUSTER}={cluster}" if cluster else ""

    return selector


#: (group, kind) -> the label selector of its pods (Kueue's per-integration PodLabelSelector)
_SELECTORS: dict[tuple[str, str], Callable[[JSON], str]] = {
    ("batch", "Job"): lambda obj: f"batch.kubernetes.io/job-name={_name(obj)}",
    ("jobset.x-k8s.io", "JobSet"): lambda obj: f"jobset.sigs.k8s.io/jobset-name={_name(obj)}",
    ("trainer.kubeflow.org", "TrainJob"): lambda obj: f"jobset.sigs.k8s.io/jobset-name={_name(obj)}",
    ("kubeflow.org", "MPIJob"): _kubeflow("mpi-operator"),
    ("kubeflow.org", "PyTorchJob"): _kubeflow("pytorchjob-controller"),
    ("kubeflow.org", "TFJob"): _kubeflow("tfjob-controller"),
    ("kubeflow.org", "XGBoostJob"): _kubeflow("xgboostjob-controller"),
    ("kubeflow.org", "JAXJob"): _kubeflow("jaxjob-controller"),
    ("kubeflow.org", "PaddleJob"): _kubeflow("paddlejob-controller"),
    ("ray.io", "RayCluster"): lambda obj: f"{_RAY_CLUSTER}={_name(obj)}",
    ("ray.io", "RayJob"): _ray("status", "rayClusterName"),
    ("ray.io", "RayService"): _ray("status", "activeServiceStatus", "rayClusterName"),
    ("sparkoperator.k8s.io", "SparkApplication"): lambda obj: f"sparkoperator.k8s.io/app-name={_name(obj)}",
    ("", "Pod"): lambda obj: (
        "kueue.x-k8s.io/pod-group-name=" + _dig(obj, "metadata", "labels", "kueue.x-k8s.io/pod-group-name")
    ),
}


def pod_selector(kind: Kind, obj: JSON) -> str:
    """The label selector of ``obj``'s pods; '' for a kind (or a state) that has none."""
    rule = _SELECTORS.get((kind.group, kind.kind))
    return rule(obj) if rule is not None else ""


def table_rows(table: JSON, *, wide: bool, namespaces: bool) -> tuple[list[str], list[list[str]]]:
    """A ``meta.k8s.io/v1`` Table as kubectl prints it: priority-0 columns (all with ``wide``), and a
    NAMESPACE column first across namespaces."""
    columns = [c for c in table.get("columnDefinitions") or [] if wide or not c.get("priority")]
    keep = [i for i, c in enumerate(table.get("columnDefinitions") or []) if wide or not c.get("priority")]
    headers = [str(c.get("name", "")) for c in columns]
    rows = []
    for row in table.get("rows") or []:
        cells = row.get("cells") or []
        shown = ["<none>" if cells[i] is None else str(cells[i]) for i in keep if i < len(cells)]
        if namespaces:
            shown.insert(0, _dig(row.get("object") or {}, "metadata", "namespace"))
        rows.append(shown)
    if namespaces:
        headers.insert(0, "Namespace")
    return headers, rows


async def _table_pages(
    session: Session, namespace: str | None, label: str, field: str
) -> tuple[JSON | None, list[JSON]]:
    """(the first page's Table with every page's rows, the rows)."""
    path = f"/api/v1/namespaces/{namespace}/pods" if namespace else "/api/v1/pods"
    first: JSON | None = None
    rows: list[JSON] = []
    cont = ""
    while True:
        query: dict[str, str | int] = {"limit": 500}
        if label:
            query["labelSelector"] = label
        if field:
            query["fieldSelector"] = field
        if cont:
            query["continue"] = cont
        page = await session.client.request("GET", path, query=query, accept=TABLE)
        first = first or page
        rows += page.get("rows") or page.get("items") or []
        cont = str((page.get("metadata") or {}).get("continue") or "")
        if not cont:
            return first, rows


async def list_pods_command(session: Session, args: argparse.Namespace, out: TextIO = sys.stdout) -> int:
    word, slash, name = args.for_object.partition("/")
    if not slash or not name:
        raise UsageError(
            f"invalid value '{args.for_object}' used in --for flag; value must be in the format "
            "TYPE[.API-GROUP]/NAME"
        )
    kind = await kind_for(session.client, word)
    obj = await session.client.get(kind, name=name, namespace=session.namespace if kind.namespaced else None)
    selector = pod_selector(kind, obj)
    if not selector:
        raise NotQueued(f"unsupported kind: {kind.kind}")
    label = f"{args.selector},{selector}" if args.selector else selector
    namespace = None if args.all_namespaces else session.namespace
    if args.output in ("json", "yaml", "name"):
        items: list[JSON] = []
        async for page, _ in session.client.list_pages(
            Kind("Pod", "", "v1", "pods", namespaced=True),
            namespace=namespace,
            label_selector=label,
            field_selector=args.field_selector,
        ):
            items += page
        for pod in items:
            pod = {"apiVersion": "v1", "kind": "Pod", **pod}
            out.write(name_line(pod) + "\n" if args.output == "name" else dump(pod, args.output))
        if not items:
            _nothing(namespace)
        return 0
    table, rows = await _table_pages(session, namespace, label, args.field_selector)
    if not rows or table is None:
        _nothing(namespace)
        return 0
    headers, cells = table_rows(
        {**table, "rows": rows}, wide=args.output == "wide", namespaces=namespace is None
    )
    out.write(render_table(headers, cells))
    return 0


def _nothing(namespace: str | None) -> None:
    if namespace is not None:
        print(f"No resources found in {namespace} namespace.", file=sys.stderr)
    else:
        print("No resources found.", file=sys.stderr)
