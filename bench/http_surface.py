"""Every request the HTTPS port can be sent, drawn at random, and what a caller may expect back.

Shared by the fuzz test (``tests/unit/test_server_fuzz.py``, a few hundred requests with hypothesis drawing
the random source) and the long benchmark (``python -m bench.http_fuzz``, 100,000 and more):

* :func:`draw_request` draws one request: a review for every admission path (golden captures and sample
  objects of every queued kind and Kueue kind, as CREATE/UPDATE/DELETE, by users and the controller),
  ConversionReviews of every Kueue kind both ways (topology slices included), the visibility API with any
  ``limit``/``offset`` and names, ``/metrics`` and the probes, unknown paths and methods; then damaged:
  fields deleted or replaced by any JSON value, counts made huge or negative, strings made long, objects
  nested deep, lists and label maps made wide, bodies truncated or replaced by random bytes;
* :func:`problems` says what is wrong with an answer, as a user would notice it: a 5xx, a body that is not
  the protocol's review (for the sender's uid) or a Kubernetes ``Status``, a review that reports an internal
  error, an answer out of proportion to the request.

``scale`` (0..1] shrinks the adversarial sizes (the unit test runs small; the benchmark at full size).
"""

from __future__ import annotations

import copy
import json
import random
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import quote

import orjson

from kueue_webhook.admission.routes import ROUTES
from kueue_webhook.api.bounds import MAX_BODY_BYTES
from kueue_webhook.api.conversion_review import MAX_RESPONSE_BYTES
from kueue_webhook.http.visibility import Visibility

__all__ = ["ADMISSION_PATHS", "FuzzRequest", "draw_request", "problems", "visibility_of_research"]

JSON = dict[str, Any]
GOLDEN = Path(__file__).resolve().parent.parent / "tests" / "golden"
ADMISSION_PATHS = sorted(ROUTES)
VISIBILITY = "/apis/visibility.kueue.x-k8s.io/v1beta2"
QUEUE_LABEL = "kueue.x-k8s.io/queue-name"
CONTROLLER = "system:serviceaccount:kueue-system:kueue-controller-manager"


@dataclass(frozen=True, slots=True)
class FuzzRequest:
    """One request; ``uid`` is the review uid the answer must carry (None when the body is not a review)."""

    method: str
    path: str
    body: bytes = b""
    content_type: str = "application/json"
    uid: str | None = None
    what: str = ""
    headers: dict[str, str] = field(default_factory=dict)


# ---- samples --------------------------------------------------------------------------------------------
def _load(name: str) -> Any:
    return json.loads((GOLDEN / name).read_text())


_GOLDEN_REVIEWS: list[JSON] = [_load(path.name)["review"] for path in sorted(GOLDEN.glob("admission-*.json"))]
_JOB: JSON = _load("job-create.json")["response"]["body"]
_TEMPLATE: JSON = _JOB["spec"]["template"]
_KUEUE: dict[str, JSON] = {
    kind: _load(f"kueue-{kind.lower()}-create.json")["response"]["body"]
    for kind in ("Workload", "ClusterQueue", "LocalQueue", "ResourceFlavor")
}
_KUEUE["Cohort"] = {
    "apiVersion": "kueue.x-k8s.io/v1beta2",
    "kind": "Cohort",
    "metadata": {"name": "org"},
    "spec": {"resourceGroups": _KUEUE["ClusterQueue"]["spec"].get("resourceGroups", [])},
}
_KUEUE["WorkloadPriorityClass"] = {
    "apiVersion": "kueue.x-k8s.io/v1beta2",
    "kind": "WorkloadPriorityClass",
    "metadata": {"name": "high"},
    "value": 1000,
}


def _meta(name: str) -> JSON:
    return {"name": name, "namespace": "golden-hooked", "labels": {QUEUE_LABEL: "team-a-gpu"}}


def _replicas(names: tuple[str, ...]) -> JSON:
    return {name: {"replicas": 2, "template": copy.deepcopy(_TEMPLATE)} for name in names}


def _queued_kinds() -> dict[tuple[str, str, str], JSON]:
    """A plausible object of every kind the integrations queue, keyed (group, version, kind)."""
    template = _TEMPLATE
    ray_cluster = {
        "headGroupSpec": {"template": copy.deepcopy(template)},
        "workerGroupSpecs": [
            {"groupName": "w", "replicas": 2, "minReplicas": 1, "maxReplicas": 4, "template": template}
        ],
    }
    return {
        ("batch", "v1", "Job"): _JOB,
        ("", "v1", "Pod"): {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": _meta("p"),
            "spec": template["spec"],
        },
        ("apps", "v1", "Deployment"): {
            "metadata": _meta("d"),
            "spec": {"replicas": 3, "template": template},
        },
        ("apps", "v1", "StatefulSet"): {
            "metadata": _meta("s"),
            "spec": {"replicas": 3, "template": template},
            "status": {"readyReplicas": 0},
        },
        ("jobset.x-k8s.io", "v1alpha2", "JobSet"): {
            "metadata": _meta("js"),
            "spec": {
                "suspend": False,
                "replicatedJobs": [
                    {
                        "name": "w",
                        "replicas": 2,
                        "template": {"spec": {"parallelism": 2, "template": template}},
                    }
                ],
            },
        },
        ("kubeflow.org", "v1", "PyTorchJob"): {
            "metadata": _meta("pt"),
            "spec": {"runPolicy": {"suspend": False}, "pytorchReplicaSpecs": _replicas(("Master", "Worker"))},
        },
        ("kubeflow.org", "v1", "TFJob"): {
            "metadata": _meta("tf"),
            "spec": {"runPolicy": {"suspend": False}, "tfReplicaSpecs": _replicas(("Chief", "Worker", "PS"))},
        },
        ("kubeflow.org", "v2beta1", "MPIJob"): {
            "metadata": _meta("mpi"),
            "spec": {"runPolicy": {"suspend": False}, "mpiReplicaSpecs": _replicas(("Launcher", "Worker"))},
        },
        ("ray.io", "v1", "RayJob"): {
            "metadata": _meta("rj"),
            "spec": {"suspend": False, "rayClusterSpec": ray_cluster},
        },
        ("ray.io", "v1", "RayCluster"): {"metadata": _meta("rc"), "spec": {"suspend": False, **ray_cluster}},
    }


_QUEUED = _queued_kinds()


def _review(
    gvk: tuple[str, str, str], obj: JSON, old: JSON | None, operation: str, user: str, uid: str
) -> JSON:
    group, version, kind = gvk
    obj = dict(obj)
    obj.setdefault("apiVersion", f"{group}/{version}" if group else version)
    obj.setdefault("kind", kind)
    return {
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "request": {
            "uid": uid,
            "kind": {"group": group, "version": version, "kind": kind},
            "resource": {"group": group, "version": version, "resource": kind.lower() + "s"},
            "name": obj.get("metadata", {}).get("name", ""),
            "namespace": obj.get("metadata", {}).get("namespace", ""),
            "operation": operation,
            "userInfo": {"username": user, "groups": ["system:authenticated"]},
            "object": obj if operation != "DELETE" else None,
            "oldObject": old,
            "dryRun": False,
        },
    }


# ---- damage ---------------------------------------------------------------------------------------------
_COUNT_FIELDS = (
    "replicas",
    "parallelism",
    "completions",
    "count",
    "minCount",
    "domainCount",
    "minReplicas",
    "maxReplicas",
    "backoffLimit",
    "value",
    "priority",
    "universal",
)
_HUGE_NUMBERS: tuple[Any, ...] = (
    2**31 - 1,
    2**31,
    2**63 - 1,
    -(2**63),
    10**30,
    1e308,
    -1,
    0,
    1.5,
    "1000000000",
    True,
    None,
)


def _small_value(rng: random.Random, depth: int = 0) -> Any:
    choice = rng.randrange(9 if depth < 3 else 6)
    if choice == 0:
        return None
    if choice == 1:
        return rng.random() < 0.5
    if choice == 2:
        return rng.choice(_HUGE_NUMBERS) if rng.random() < 0.3 else rng.randint(-5, 10)
    if choice == 3:
        return rng.uniform(-1e6, 1e6)
    if choice in (4, 5):
        return "".join(rng.choice('ab-./:_Z9 é\u0000"\\{[') for _ in range(rng.randrange(12)))
    if choice in (6, 7):
        return [_small_value(rng, depth + 1) for _ in range(rng.randrange(4))]
    return {_small_value_key(rng): _small_value(rng, depth + 1) for _ in range(rng.randrange(4))}


def _small_value_key(rng: random.Random) -> str:
    return rng.choice(["name", "count", "spec", "template", "labels", "", "x" * rng.randrange(1, 9), "é"])


def _big_value(rng: random.Random, scale: float) -> Any:
    """Something huge or adversarial: long strings, deep nesting, wide lists and maps, big numbers."""
    size = max(1, int(rng.choice((1_000, 20_000, 200_000, 1_000_000)) * scale))
    choice = rng.randrange(6)
    if choice == 0:
        return rng.choice("xé{9") * size
    if choice == 1:
        deep: Any = rng.choice([1, "x", None])
        for _ in range(rng.choice((20, 60, 99, 101, 150, 400))):
            deep = [deep] if rng.random() < 0.5 else {"a": deep}
        return deep
    if choice == 2:
        return [{"name": f"n{i}", "value": "v"} for i in range(min(size, 100_000) // 10)]
    if choice == 3:
        return {f"key-{i}": "v" for i in range(min(size, 100_000) // 10)}
    if choice == 4:
        return [0] * min(size, 500_000)
    return rng.choice(_HUGE_NUMBERS)


def _walk_to(rng: random.Random, root: Any) -> tuple[Any, Any] | None:
    """A random (container, key) somewhere inside ``root``."""
    parent = root
    while True:
        keys = list(parent) if isinstance(parent, dict) else list(range(len(parent)))
        if not keys:
            return None
        key = rng.choice(keys)
        child = parent[key]
        if isinstance(child, dict | list) and child and rng.random() < 0.75:
            parent = child
            continue
        return parent, key


def _count_fields(root: Any, found: list[tuple[Any, Any]], depth: int = 0) -> None:
    if depth > 40:
        return
    items = root.items() if isinstance(root, dict) else enumerate(root) if isinstance(root, list) else ()
    for key, value in items:
        if key in _COUNT_FIELDS and not isinstance(value, dict | list):
            found.append((root, key))
        elif isinstance(value, dict | list):
            _count_fields(value, found, depth + 1)


def damage(rng: random.Random, document: Any, scale: float, big: float = 0.2) -> None:
    """Damage ``document`` in place, once to a few times: a count made huge (30%), a field deleted (20%),
    replaced by a small value (the rest) or, with probability ``big`` each time, by a huge one."""
    for _ in range(rng.choice((1, 1, 1, 2, 3))):
        if rng.random() < big:
            spot = _walk_to(rng, document)
            if spot is not None:
                spot[0][spot[1]] = _big_value(rng, scale)
            continue
        kind = rng.randrange(10)
        if kind <= 2:
            counts: list[tuple[Any, Any]] = []
            _count_fields(document, counts)
            if counts:
                parent, key = rng.choice(counts)
                parent[key] = rng.choice(_HUGE_NUMBERS)
                continue
        spot = _walk_to(rng, document)
        if spot is None:
            return
        parent, key = spot
        if kind <= 4:
            if isinstance(parent, dict):
                del parent[key]
            else:
                parent.pop(key)
        else:
            parent[key] = _small_value(rng)


# ---- the requests ---------------------------------------------------------------------------------------
def _admission(rng: random.Random, uid: str) -> tuple[str, JSON]:
    path = rng.choice(ADMISSION_PATHS)
    source = rng.randrange(3)
    if source == 0:
        review = copy.deepcopy(rng.choice(_GOLDEN_REVIEWS))
        review["request"]["uid"] = uid
        return path, review
    if source == 1:
        gvk = rng.choice(list(_QUEUED))
        obj = _QUEUED[gvk]
    else:
        kind = rng.choice(list(_KUEUE))
        gvk, obj = ("kueue.x-k8s.io", "v1beta2", kind), _KUEUE[kind]
    obj = copy.deepcopy(obj)
    operation = rng.choice(("CREATE", "CREATE", "UPDATE", "UPDATE", "DELETE"))
    old = copy.deepcopy(obj) if operation != "CREATE" else None
    if old is not None and rng.random() < 0.5:
        damage(rng, old, 0.01)
    user = rng.choice((CONTROLLER, "alice", "system:admin", ""))
    return path, _review(gvk, obj, old, operation, user, uid)


def _topology(rng: random.Random) -> JSON:
    levels = [f"level-{i}" for i in range(rng.choice((1, 2, 4, 16)))]
    slices = []
    for _ in range(rng.choice((1, 1, 2, 5))):
        count = rng.choice((1, 2, 3, 1000, 100_000, 1_000_000, 2**31 - 1))
        individual = count <= 1000 and rng.random() < 0.5
        per_level = [
            {"individual": {"prefix": "n-", "roots": [str(i) for i in range(count)]}}
            if individual and level == len(levels) - 1
            else {"universal": "v" * rng.choice((1, 63))}
            for level in range(len(levels))
        ]
        pods = {"individual": [1] * count} if individual else {"universal": rng.randint(1, 8)}
        slices.append({"domainCount": count, "valuesPerLevel": per_level, "podCounts": pods})
    return {"levels": levels, "slices": slices}


def _conversion(rng: random.Random, uid: str) -> JSON:
    objects = []
    for _ in range(rng.choice((0, 1, 1, 1, 2, 10))):
        kind = rng.choice([*_KUEUE, "AdmissionCheck", "Workload", "Workload"])
        obj = copy.deepcopy(_KUEUE.get(kind, {"kind": kind, "metadata": {"name": "x"}, "spec": {}}))
        obj["kind"] = kind
        if kind == "Workload" and rng.random() < 0.7:
            obj.setdefault("status", {})["admission"] = {
                "clusterQueue": "cq",
                "podSetAssignments": [{"name": "main", "count": 1, "topologyAssignment": _topology(rng)}],
            }
        obj["apiVersion"] = rng.choice(("kueue.x-k8s.io/v1beta2", "kueue.x-k8s.io/v1beta1"))
        if obj["apiVersion"].endswith("v1beta1") and kind == "Workload" and "status" in obj:
            topology = obj["status"]["admission"]["podSetAssignments"][0]["topologyAssignment"]
            topology.pop("slices", None)
            topology["domains"] = [{"values": ["a"] * len(topology["levels"]), "count": 1}] * rng.choice(
                (1, 50)
            )
        objects.append(obj)
    desired = rng.choice(("kueue.x-k8s.io/v1beta1", "kueue.x-k8s.io/v1beta2", "kueue.x-k8s.io/v9"))
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "ConversionReview",
        "request": {"uid": uid, "desiredAPIVersion": desired, "objects": objects},
    }


def _query_value(rng: random.Random) -> str:
    return rng.choice(
        (
            "",
            "0",
            "1",
            "-1",
            "10",
            "100000",
            "1000000",
            "9" * 19,
            "9" * 25,
            "9" * 5000,
            "1e3",
            "x",
            "1_0",
            " 1",
        )
    )


def _visibility(rng: random.Random) -> FuzzRequest:
    name = rng.choice(("research", "nope", "a" * 300, "é", "..", "%2F", "x" * 3000))
    base = rng.choice(
        (
            f"{VISIBILITY}/clusterqueues/{quote(name)}/pendingworkloads",
            f"{VISIBILITY}/namespaces/ns/localqueues/{quote(name)}/pendingworkloads",
            f"{VISIBILITY}/namespaces/{quote(name)}/localqueues/a/pendingworkloads",
            "/apis",
            "/apis/visibility.kueue.x-k8s.io",
            VISIBILITY,
        )
    )
    query = "&".join(f"{key}={quote(_query_value(rng))}" for key in ("limit", "offset") if rng.random() < 0.6)
    return FuzzRequest("GET", f"{base}?{query}" if query else base, what="visibility")


def draw_request(rng: random.Random, *, scale: float = 1.0, big: float = 0.2, serial: int = 0) -> FuzzRequest:
    """One request for the HTTPS port (see the module docstring); ``big`` is the chance of each damage being
    a huge value (long string, deep nesting, wide list or map)."""
    uid = f"fuzz-{serial}-{rng.getrandbits(32):08x}"
    area = rng.random()
    if area < 0.06:
        return _visibility(rng)
    if area < 0.09:
        path = rng.choice(("/metrics", "/healthz", "/readyz", "/nowhere", "/convert", "/validate"))
        return FuzzRequest(rng.choice(("GET", "GET", "PUT", "DELETE")), path, what="plain")
    if area < 0.12:
        body = bytes(rng.getrandbits(8) for _ in range(rng.randrange(600)))
        path = rng.choice([*ADMISSION_PATHS, "/convert"])
        return FuzzRequest("POST", path, body, what="random bytes")
    if area < 0.30:
        document: JSON = _conversion(rng, uid)
        path, what = "/convert", "conversion"
    else:
        path, document = _admission(rng, uid)
        what = "admission"
    damaged = rng.random() < 0.7
    if damaged:
        damage(rng, document["request"] if rng.random() < 0.9 else document, scale, big)
    body = orjson.dumps(document, option=orjson.OPT_NON_STR_KEYS) if _serialisable(document) else b"{"
    content_type = "application/json"
    if rng.random() < 0.03:
        body = body[: rng.randrange(len(body) + 1)]
    if rng.random() < 0.01:
        content_type = rng.choice(("text/plain", "application/yaml", ""))
    request = document.get("request")
    uid_sent = request.get("uid") if isinstance(request, dict) else None
    return FuzzRequest(
        "POST",
        path,
        body,
        content_type,
        uid=uid_sent if isinstance(uid_sent, str) else None,
        what=f"{what}{' damaged' if damaged else ''}",
    )


def _serialisable(document: Any) -> bool:
    try:
        orjson.dumps(document, option=orjson.OPT_NON_STR_KEYS)
    except TypeError:  # nested deeper than orjson writes: send it as it would be cut
        return False
    return True


def visibility_of_research(pending: int) -> Visibility:
    """The visibility API over ClusterQueue ``research`` (one GPU, taken) with ``pending`` Workloads waiting
    in LocalQueues ``ns/a`` and ``ns/b``: what the fuzzed visibility paths read."""
    from tests.unit.core.builders import admitted, cluster_queue, run_until_quiet, state_with, workload

    state = state_with(
        cluster_queue("research", {"gpu-nodes": {"nvidia.com/gpu": 1}}),
        flavors=("gpu-nodes",),
        local_queues={"a": "research", "b": "research"},
    )
    gpu = {"nvidia.com/gpu": "1"}
    state.upsert_workload(workload("running", gpu, queue="a"))
    assert admitted(run_until_quiet(state)) == ["ns/running"]
    for index in range(pending):
        state.upsert_workload(workload(f"w{index}", gpu, queue="ab"[index % 2], created=index + 1))
    run_until_quiet(state)
    return Visibility(scheduler=lambda: state, workload=lambda namespace, name: None, identity="fuzz")


# ---- the contract ---------------------------------------------------------------------------------------
_REVIEW_CODES = frozenset({200, 400, 403, 422})
#: aiohttp's limit on the request line; a longer URL is refused before any handler runs
_MAX_REQUEST_LINE = 8190


def problems(request: FuzzRequest, status: int, body: bytes) -> list[str]:
    """What a user would notice is wrong with this answer to ``request`` (empty when all is well)."""
    found: list[str] = []
    if status >= 500:
        found.append(f"HTTP {status}")
    limit = 2 * len(request.body) + 1024 * 1024
    if request.path == "/convert":
        limit += MAX_RESPONSE_BYTES
    if request.path.startswith("/metrics") or request.path.startswith("/apis"):
        limit = max(limit, MAX_BODY_BYTES)
    if len(body) > limit:
        found.append(f"answer of {len(body)} bytes to a request of {len(request.body)}")
    path = request.path.split("?", 1)[0]
    if len(request.path) > _MAX_REQUEST_LINE and 400 <= status < 500:
        return found  # the HTTP parser's own refusal of a request line too long to read
    if path in ("/metrics", "/healthz", "/readyz") and status not in (404, 405):
        if status != 200:
            found.append(f"{path} answered {status}")
        return found
    try:
        answer = orjson.loads(body)
    except orjson.JSONDecodeError:
        return [*found, f"HTTP {status} with a body that is not JSON: {body[:120]!r}"]
    if not isinstance(answer, dict):
        return [*found, "answer is not a JSON object"]
    if status != 200:  # no such path or method included: a Status, as kube-apiserver answers
        if answer.get("kind") != "Status" or answer.get("code") != status or not answer.get("message"):
            found.append(f"HTTP {status} without a Status saying why: {body[:200]!r}")
        return found
    if request.method == "POST" and path == "/convert":
        found.extend(_conversion_problems(request, answer))
    elif request.method == "POST":
        found.extend(_admission_problems(request, answer))
    return found


def _admission_problems(request: FuzzRequest, answer: JSON) -> list[str]:
    if (answer.get("apiVersion"), answer.get("kind")) != ("admission.k8s.io/v1", "AdmissionReview"):
        return [f"200 without an AdmissionReview: {str(answer)[:200]}"]
    response = answer.get("response") or {}
    found = []
    if request.uid is not None and response.get("uid") != request.uid:
        found.append(f"review answered for uid {response.get('uid')!r}, sent {request.uid!r}")
    if not isinstance(response.get("allowed"), bool):
        found.append("review without allowed")
    code = (response.get("status") or {}).get("code")
    if code not in _REVIEW_CODES:
        found.append(f"review with status code {code}: {(response.get('status') or {}).get('message')}")
    if response.get("allowed") is False and not (response.get("status") or {}).get("message"):
        found.append("denial without a message")
    return found


def _conversion_problems(request: FuzzRequest, answer: JSON) -> list[str]:
    if (answer.get("apiVersion"), answer.get("kind")) != ("apiextensions.k8s.io/v1", "ConversionReview"):
        return [f"200 without a ConversionReview: {str(answer)[:200]}"]
    response = answer.get("response") or {}
    found = []
    if request.uid is not None and response.get("uid") != request.uid:
        found.append(f"conversion answered for uid {response.get('uid')!r}, sent {request.uid!r}")
    result = response.get("result") or {}
    if result.get("status") not in ("Success", "Failure"):
        found.append(f"conversion result {result}")
    if result.get("status") == "Failure" and not result.get("message"):
        found.append("conversion failure without a message")
    return found
