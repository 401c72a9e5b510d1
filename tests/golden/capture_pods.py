"""Capture kube-apiserver's answers to the pod writes a queue controller makes (tests/golden/pod-*.json).

Run against a real control plane (no webhooks registered, so every answer is kube-apiserver's own):
``flock /tmp/kube.lock python -m tests.golden.capture_pods KUBECONFIG``. It creates a gated pod in a
namespace of its own, sends each update ValidatePodUpdate refuses or allows for such a pod, writes one
capture per request and deletes the namespace. Kept so that the captures can be retaken, never edited.
"""

from __future__ import annotations

import base64
import json
import ssl
import sys
import tempfile
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import yaml

from tests.golden import GOLDEN

NAMESPACE = "golden-pods"
POD = "gated"
BASE = f"/api/v1/namespaces/{NAMESPACE}/pods"

GATED_POD = {
    "apiVersion": "v1",
    "kind": "Pod",
    "metadata": {"name": POD, "namespace": NAMESPACE},
    "spec": {
        "schedulingGates": [{"name": "kueue.x-k8s.io/admission"}],
        "nodeSelector": {"pool": "a"},
        "tolerations": [{"key": "gpu", "operator": "Equal", "value": "a", "effect": "NoSchedule"}],
        "restartPolicy": "Never",
        "containers": [{"name": "c", "image": "busybox", "resources": {"requests": {"cpu": "100m"}}}],
    },
}

JSON_PATCH = "application/json-patch+json"
MERGE_PATCH = "application/merge-patch+json"

#: (capture name, method, path, content type, body), in the order they are sent
STEPS: list[tuple[str, str, str, str, Any]] = [
    ("pod-create-gated", "POST", BASE, "application/json", GATED_POD),
    (
        "pod-update-add-scheduling-gate",
        "PATCH",
        f"{BASE}/{POD}",
        JSON_PATCH,
        [{"op": "add", "path": "/spec/schedulingGates/-", "value": {"name": "example.com/second"}}],
    ),
    (
        "pod-update-modify-toleration",
        "PATCH",
        f"{BASE}/{POD}",
        JSON_PATCH,
        [{"op": "replace", "path": "/spec/tolerations/0/value", "value": "b"}],
    ),
    (
        "pod-update-remove-toleration",
        "PATCH",
        f"{BASE}/{POD}",
        JSON_PATCH,
        [{"op": "remove", "path": "/spec/tolerations/0"}],
    ),
    (
        "pod-update-gated-node-selector-changed",
        "PATCH",
        f"{BASE}/{POD}",
        MERGE_PATCH,
        {"spec": {"nodeSelector": {"pool": "b"}}},
    ),
    (
        "pod-update-gated-node-selector-removed",
        "PATCH",
        f"{BASE}/{POD}",
        MERGE_PATCH,
        {"spec": {"nodeSelector": None}},
    ),
    (
        "pod-update-other-field",
        "PATCH",
        f"{BASE}/{POD}",
        JSON_PATCH,
        [{"op": "replace", "path": "/spec/restartPolicy", "value": "OnFailure"}],
    ),
    (
        "pod-update-two-errors",
        "PATCH",
        f"{BASE}/{POD}",
        JSON_PATCH,
        [
            {"op": "add", "path": "/spec/schedulingGates/-", "value": {"name": "example.com/second"}},
            {"op": "replace", "path": "/spec/nodeSelector/pool", "value": "b"},
        ],
    ),
    (
        "pod-update-every-rule",
        "PATCH",
        f"{BASE}/{POD}",
        JSON_PATCH,
        [
            {"op": "replace", "path": "/spec/restartPolicy", "value": "OnFailure"},
            {"op": "replace", "path": "/spec/nodeSelector/pool", "value": "b"},
            {"op": "add", "path": "/spec/schedulingGates/-", "value": {"name": "example.com/second"}},
            {"op": "replace", "path": "/spec/tolerations/0/value", "value": "b"},
        ],
    ),
    (
        "pod-update-ungate",
        "PATCH",
        f"{BASE}/{POD}",
        JSON_PATCH,
        [
            {"op": "remove", "path": "/spec/schedulingGates"},
            {"op": "add", "path": "/spec/nodeSelector/zone", "value": "z1"},
            {"op": "add", "path": "/spec/tolerations/-", "value": {"key": "spot", "operator": "Exists"}},
        ],
    ),
    (
        "pod-update-ungated-node-selector-added",
        "PATCH",
        f"{BASE}/{POD}",
        MERGE_PATCH,
        {"spec": {"nodeSelector": {"pool": "a", "zone": "z1", "rack": "r1"}}},
    ),
    (
        "pod-update-ungated-add-scheduling-gate",
        "PATCH",
        f"{BASE}/{POD}",
        JSON_PATCH,
        [{"op": "add", "path": "/spec/schedulingGates", "value": [{"name": "kueue.x-k8s.io/admission"}]}],
    ),
    (
        "pod-status-termination-target",
        "PATCH",
        f"{BASE}/{POD}/status",
        MERGE_PATCH,
        {
            "status": {
                "conditions": [
                    {
                        "type": "TerminationTarget",
                        "status": "True",
                        "reason": "WorkloadEvictedDueToPreempted",
                        "message": "Preempted to accommodate a workload",
                        "lastTransitionTime": "2026-01-01T00:00:00Z",
                    }
                ]
            }
        },
    ),
]


def _client(kubeconfig: Path) -> tuple[str, ssl.SSLContext]:
    config = yaml.safe_load(kubeconfig.read_text())
    cluster = config["clusters"][0]["cluster"]
    user = config["users"][0]["user"]
    directory = Path(tempfile.mkdtemp())
    files = {}
    for key in ("certificate-authority-data", "client-certificate-data", "client-key-data"):
        files[key] = directory / key
        files[key].write_bytes(base64.b64decode(cluster.get(key) or user.get(key)))
    context = ssl.create_default_context(cafile=str(files["certificate-authority-data"]))
    context.load_cert_chain(str(files["client-certificate-data"]), str(files["client-key-data"]))
    return str(cluster["server"]), context


def _send(
    server: str, context: ssl.SSLContext, method: str, path: str, content_type: str, body: Any
) -> tuple[int, str, Any]:
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(server + path, data=data, method=method)
    request.add_header("Content-Type", content_type)
    request.add_header("Accept", "application/json")
    try:
        with urllib.request.urlopen(request, context=context) as response:
            return response.status, response.headers["Content-Type"], json.loads(response.read())
    except urllib.error.HTTPError as error:
        return error.code, error.headers["Content-Type"], json.loads(error.read())


def main(kubeconfig: str) -> None:
    server, context = _client(Path(kubeconfig))
    namespace = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}}
    _send(server, context, "POST", "/api/v1/namespaces", "application/json", namespace)
    try:
        for name, method, path, content_type, body in STEPS:
            status, answer_type, answer = _send(server, context, method, path, content_type, body)
            capture = {
                "request": {"method": method, "path": path, "contentType": content_type, "body": body},
                "response": {"status": status, "contentType": answer_type, "body": answer},
            }
            (GOLDEN / f"{name}.json").write_text(json.dumps(capture, indent=2, sort_keys=True) + "\n")
            print(status, name)
    finally:
        _send(server, context, "DELETE", f"/api/v1/namespaces/{NAMESPACE}", "application/json", None)


if __name__ == "__main__":
    main(sys.argv[1])
