"""Decoding of the Kubernetes protobuf wire format, for the few built-in kinds kubectl sends that way.

kubectl v1.32 encodes typed objects as `application/vnd.kubernetes.protobuf` for built-in kinds: `kubectl
create namespace|job|configmap|secret|serviceaccount` POST protobuf, not JSON (see golden
kubectl-create-job.log). Responses can stay JSON because kubectl also accepts it. We decode with a field table
per message (numbers from k8s.io/api's generated.proto) and convert to the JSON shape: zero values of
non-pointer Go fields are dropped as `omitempty` would, pointer fields keep explicit zeros. A field number the
table does not know is refused with 415 naming it, rather than silently dropping user data.
"""

from __future__ import annotations

import base64
from datetime import UTC, datetime
from typing import Any

from tests.fakeapi.errors import ApiError

MAGIC = b"k8s\x00"

# message -> field number -> (json name, kind, message-or-None, flags); flags: "r" repeated, "p" pointer.
Field = tuple[str, str, str | None, str]
MESSAGES: dict[str, dict[int, Field]] = {
    "Unknown": {
        1: ("typeMeta", "msg", "TypeMeta", ""),
        2: ("raw", "raw", None, ""),
        3: ("contentEncoding", "string", None, ""),
        4: ("contentType", "string", None, ""),
    },
    "TypeMeta": {1: ("apiVersion", "string", None, ""), 2: ("kind", "string", None, "")},
    "ObjectMeta": {
        1: ("name", "string", None, ""),
        2: ("generateName", "string", None, ""),
        3: ("namespace", "string", None, ""),
        4: ("selfLink", "string", None, ""),
        5: ("uid", "string", None, ""),
        6: ("resourceVersion", "string", None, ""),
        7: ("generation", "int", None, ""),
        8: ("creationTimestamp", "msg", "Time", ""),
        9: ("deletionTimestamp", "msg", "Time", ""),
        10: ("deletionGracePeriodSeconds", "int", None, "p"),
        11: ("labels", "map", "string", ""),
        12: ("annotations", "map", "string", ""),
        13: ("ownerReferences", "msg", "OwnerReference", "r"),
        14: ("finalizers", "string", None, "r"),
        17: ("managedFields", "msg", "Opaque", "r"),
    },
    "Opaque": {},
    "Time": {1: ("seconds", "int", None, ""), 2: ("nanos", "int", None, "")},
    "OwnerReference": {
        1: ("kind", "string", None, ""),
        3: ("name", "string", None, ""),
        4: ("uid", "string", None, ""),
        5: ("apiVersion", "string", None, ""),
        6: ("controller", "bool", None, "p"),
        7: ("blockOwnerDeletion", "bool", None, "p"),
    },
    "LabelSelector": {
        1: ("matchLabels", "map", "string", ""),
        2: ("matchExpressions", "msg", "LabelSelectorRequirement", "r"),
    },
    "LabelSelectorRequirement": {
        1: ("key", "string", None, ""),
        2: ("operator", "string", None, ""),
        3: ("values", "string", None, "r"),
    },
    "Namespace": {
        1: ("metadata", "msg", "ObjectMeta", ""),
        2: ("spec", "msg", "NamespaceSpec", ""),
        3: ("status", "msg", "NamespaceStatus", ""),
    },
    "NamespaceSpec": {1: ("finalizers", "string", None, "r")},
    "NamespaceStatus": {1: ("phase", "string", None, "")},
    "ConfigMap": {
        1: ("metadata", "msg", "ObjectMeta", ""),
        2: ("data", "map", "string", ""),
        3: ("binaryData", "map", "bytes", ""),
        4: ("immutable", "bool", None, "p"),
    },
    "Secret": {
        1: ("metadata", "msg", "ObjectMeta", ""),
        2: ("data", "map", "bytes", ""),
        3: ("type", "string", None, ""),
        4: ("stringData", "map", "string", ""),
        5: ("immutable", "bool", None, "p"),
    },
    "ServiceAccount": {
        1: ("metadata", "msg", "ObjectMeta", ""),
        2: ("secrets", "msg", "Opaque", "r"),
        3: ("imagePullSecrets", "msg", "LocalObjectReference", "r"),
        4: ("automountServiceAccountToken", "bool", None, "p"),
    },
    "LocalObjectReference": {1: ("name", "string", None, "")},
    "Job": {
        1: ("metadata", "msg", "ObjectMeta", ""),
        2: ("spec", "msg", "JobSpec", ""),
        3: ("status", "msg", "JobStatus", ""),
    },
    "JobSpec": {
        1: ("parallelism", "int", None, "p"),
        2: ("completions", "int", None, "p"),
        3: ("activeDeadlineSeconds", "int", None, "p"),
        4: ("selector", "msg", "LabelSelector", ""),
        5: ("manualSelector", "bool", None, "p"),
        6: ("template", "msg", "PodTemplateSpec", ""),
        7: ("backoffLimit", "int", None, "p"),
        8: ("ttlSecondsAfterFinished", "int", None, "p"),
        9: ("completionMode", "string", None, "p"),
        10: ("suspend", "bool", None, "p"),
        12: ("backoffLimitPerIndex", "int", None, "p"),
        13: ("maxFailedIndexes", "int", None, "p"),
        14: ("podReplacementPolicy", "string", None, "p"),
        15: ("managedBy", "string", None, "p"),
    },
    "JobStatus": {
        4: ("active", "int", None, ""),
        5: ("succeeded", "int", None, ""),
        6: ("failed", "int", None, ""),
        7: ("completedIndexes", "string", None, ""),
        9: ("ready", "int", None, "p"),
        11: ("terminating", "int", None, "p"),
    },
    "PodTemplateSpec": {1: ("metadata", "msg", "ObjectMeta", ""), 2: ("spec", "msg", "PodSpec", "")},
    "PodSpec": {
        2: ("containers", "msg", "Container", "r"),
        3: ("restartPolicy", "string", None, ""),
        4: ("terminationGracePeriodSeconds", "int", None, "p"),
        5: ("activeDeadlineSeconds", "int", None, "p"),
        6: ("dnsPolicy", "string", None, ""),
        7: ("nodeSelector", "map", "string", ""),
        8: ("serviceAccountName", "string", None, ""),
        9: ("serviceAccount", "string", None, ""),
        10: ("nodeName", "string", None, ""),
        11: ("hostNetwork", "bool", None, ""),
        12: ("hostPID", "bool", None, ""),
        13: ("hostIPC", "bool", None, ""),
        15: ("imagePullSecrets", "msg", "LocalObjectReference", "r"),
        16: ("hostname", "string", None, ""),
        17: ("subdomain", "string", None, ""),
        19: ("schedulerName", "string", None, ""),
        20: ("initContainers", "msg", "Container", "r"),
        22: ("tolerations", "msg", "Toleration", "r"),
        24: ("priorityClassName", "string", None, ""),
        25: ("priority", "int", None, "p"),
    },
    "Toleration": {
        1: ("key", "string", None, ""),
        2: ("operator", "string", None, ""),
        3: ("value", "string", None, ""),
        4: ("effect", "string", None, ""),
        5: ("tolerationSeconds", "int", None, "p"),
    },
    "Container": {
        1: ("name", "string", None, ""),
        2: ("image", "string", None, ""),
        3: ("command", "string", None, "r"),
        4: ("args", "string", None, "r"),
        5: ("workingDir", "string", None, ""),
        6: ("ports", "msg", "ContainerPort", "r"),
        7: ("env", "msg", "EnvVar", "r"),
        8: ("resources", "msg", "ResourceRequirements", "p"),
        13: ("terminationMessagePath", "string", None, ""),
        14: ("imagePullPolicy", "string", None, ""),
        16: ("stdin", "bool", None, ""),
        17: ("stdinOnce", "bool", None, ""),
        18: ("tty", "bool", None, ""),
        20: ("terminationMessagePolicy", "string", None, ""),
    },
    "ContainerPort": {
        1: ("name", "string", None, ""),
        2: ("hostPort", "int", None, ""),
        3: ("containerPort", "int", None, ""),
        4: ("protocol", "string", None, ""),
        5: ("hostIP", "string", None, ""),
    },
    "EnvVar": {1: ("name", "string", None, ""), 2: ("value", "string", None, "")},
    "ResourceRequirements": {1: ("limits", "map", "Quantity", ""), 2: ("requests", "map", "Quantity", "")},
    "Quantity": {1: ("string", "string", None, "")},
    # `kubectl auth whoami` (golden kubectl-auth-whoami.log): the server reads none of it but the kind
    "SelfSubjectReview": {
        1: ("metadata", "msg", "ObjectMeta", ""),
        2: ("status", "msg", "SelfSubjectReviewStatus", ""),
    },
    "SelfSubjectReviewStatus": {1: ("userInfo", "msg", "UserInfo", "")},
    "UserInfo": {
        1: ("username", "string", None, ""),
        2: ("uid", "string", None, ""),
        3: ("groups", "string", None, "r"),
        4: ("extra", "msg", "Opaque", "r"),
    },
}
KIND_MESSAGES = {"Namespace", "ConfigMap", "Secret", "ServiceAccount", "Job", "SelfSubjectReview"}


def _unsupported(message: str) -> ApiError:
    return ApiError(
        code=415,
        reason="UnsupportedMediaType",
        message=(
            f"the body of the request was in an unknown format - protobuf: {message}; send application/json"
        ),
    )


def _varint(data: bytes, pos: int) -> tuple[int, int]:
    result = shift = 0
    while True:
        if pos >= len(data):
            raise _unsupported("truncated varint")
        byte = data[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return result, pos
        shift += 7


def _fields(data: bytes) -> list[tuple[int, int, Any]]:
    out: list[tuple[int, int, Any]] = []
    pos = 0
    while pos < len(data):
        key, pos = _varint(data, pos)
        number, wire = key >> 3, key & 7
        if wire == 0:
            value, pos = _varint(data, pos)
            out.append((number, wire, value))
        elif wire == 2:
            length, pos = _varint(data, pos)
            out.append((number, wire, data[pos : pos + length]))
            pos += length
        elif wire == 1:
            out.append((number, wire, data[pos : pos + 8]))
            pos += 8
        elif wire == 5:
            out.append((number, wire, data[pos : pos + 4]))
            pos += 4
        else:
            raise _unsupported(f"unsupported wire type {wire}")
    return out


def _signed(value: int) -> int:
    return value - (1 << 64) if value >= 1 << 63 else value


def _scalar(kind: str, raw: Any) -> Any:
    if kind == "string":
        return bytes(raw).decode()
    if kind == "bytes":
        return base64.b64encode(bytes(raw)).decode()
    if kind == "int":
        return _signed(int(raw))
    if kind == "bool":
        return bool(raw)
    return raw


def _map_entry(data: bytes, value_kind: str) -> tuple[str, Any]:
    key, value = "", "" if value_kind != "Quantity" else "0"
    for number, _, raw in _fields(data):
        if number == 1:
            key = bytes(raw).decode()
        elif number == 2:
            value = (
                decode_message(value_kind, raw)["string"]
                if value_kind == "Quantity"
                else _scalar(value_kind, raw)
            )
    return key, value


def decode_message(name: str, data: bytes) -> dict[str, Any]:
    table = MESSAGES[name]
    out: dict[str, Any] = {}
    if name == "Opaque":
        return out
    for number, _, raw in _fields(data):
        spec = table.get(number)
        if spec is None:
            raise _unsupported(f"field {number} of {name} is not understood by this server")
        json_name, kind, sub, flags = spec
        if kind == "msg":
            assert sub is not None
            value: Any = decode_message(sub, raw)
        elif kind == "map":
            assert sub is not None
            key, item = _map_entry(raw, sub)
            out.setdefault(json_name, {})[key] = item
            continue
        elif kind == "raw":
            value = bytes(raw)
        else:
            value = _scalar(kind, raw)
        if "r" in flags:
            out.setdefault(json_name, []).append(value)
        else:
            out[json_name] = value
    if name == "Time":
        seconds = int(out.get("seconds", 0))
        return {
            "time": datetime.fromtimestamp(seconds, UTC).strftime("%Y-%m-%dT%H:%M:%SZ") if seconds else None
        }
    return _drop_zero(name, out)


def _drop_zero(name: str, out: dict[str, Any]) -> dict[str, Any]:
    table = {spec[0]: spec for spec in MESSAGES[name].values()}
    result: dict[str, Any] = {}
    for key, value in out.items():
        spec = table.get(key)
        pointer = spec is not None and "p" in spec[3]
        if isinstance(value, dict) and set(value) == {"time"}:
            value = value["time"]
        if not pointer and value in ("", 0, False, None) and not isinstance(value, dict):
            continue
        if not pointer and isinstance(value, dict) and not value and spec is not None and spec[1] == "map":
            continue
        result[key] = value
    return result


def decode_object(body: bytes) -> dict[str, Any]:
    """A protobuf-encoded built-in object (envelope `k8s\\0` + runtime.Unknown) as its JSON dict."""
    if not body.startswith(MAGIC):
        raise _unsupported("missing k8s protobuf envelope")
    envelope = decode_message("Unknown", body[len(MAGIC) :])
    type_meta = envelope.get("typeMeta") or {}
    kind = type_meta.get("kind", "")
    if kind not in KIND_MESSAGES:
        raise _unsupported(f"kind {kind!r} is not decodable here")
    obj = decode_message(kind, envelope.get("raw", b""))
    return {"apiVersion": type_meta.get("apiVersion", ""), "kind": kind, **obj}
