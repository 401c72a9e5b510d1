"""Golden AdmissionReview requests captured from kube-apiserver, and a tiny JSON Patch applier for tests."""

from __future__ import annotations

import base64
import copy
import json
from typing import Any

import orjson

from kueue_webhook.admission.review import AdmissionRequest, parse_review
from tests.golden import GOLDEN

CONTROLLER = "system:serviceaccount:kueue-system:kueue-webhook"


def golden_review(number: int) -> dict[str, Any]:
    """The ``review`` of ``admission-NN-*.json`` (a fresh deep copy each time)."""
    (path,) = GOLDEN.glob(f"admission-{number:02d}-*.json")
    return copy.deepcopy(json.loads(path.read_text())["review"])


def golden_capture(number: int) -> dict[str, Any]:
    (path,) = GOLDEN.glob(f"admission-{number:02d}-*.json")
    return dict(json.loads(path.read_text()))


def request_of(review: dict[str, Any]) -> AdmissionRequest:
    return parse_review(orjson.dumps(review))


def apply_patch(document: Any, patch: list[dict[str, Any]]) -> Any:
    """Apply the ``add``/``replace``/``remove``/``test`` ops of RFC 6902 (all the webhook produces)."""
    document = copy.deepcopy(document)
    for op in patch:
        parts = [p.replace("~1", "/").replace("~0", "~") for p in op["path"].split("/")[1:]]
        parent = document
        for part in parts[:-1]:
            parent = parent[int(part)] if isinstance(parent, list) else parent[part]
        last = parts[-1]
        if op["op"] in ("add", "replace"):
            if isinstance(parent, list):
                parent.insert(len(parent) if last == "-" else int(last), op["value"])
            else:
                if op["op"] == "replace":
                    assert last in parent, op
                parent[last] = op["value"]
        elif op["op"] == "remove":
            del parent[int(last) if isinstance(parent, list) else last]
        elif op["op"] == "test":
            assert parent[last] == op["value"], op
        else:
            raise AssertionError(f"unexpected op {op}")
    return document


def decode_patch(response: dict[str, Any]) -> list[dict[str, Any]]:
    return list(orjson.loads(base64.b64decode(response["patch"])))
