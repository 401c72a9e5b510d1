"""ConversionReview ``apiextensions.k8s.io/v1`` in, ConversionReview out: what ``/convert`` speaks.

kube-apiserver posts ``request: {uid, desiredAPIVersion, objects}`` and expects ``response: {uid,
convertedObjects, result}`` with the objects in the same order. As with admission, two failures are kept
apart: a body that is not a ConversionReview at all raises :class:`ConversionReviewError` (the server answers
HTTP 400 with its message); a review whose objects cannot be converted is answered with ``result: {status:
Failure, message}``, which kube-apiserver passes on to the client, and nothing is converted.

A review is measured before anything is converted (see :mod:`kueue_webhook.api.bounds` for the body): it holds
at most :data:`MAX_REVIEW_OBJECTS` objects, which may expand to at most :data:`MAX_REVIEW_DOMAINS` v1beta1
topology domains, of at most :data:`MAX_RESPONSE_BYTES` of JSON, and nests no deeper than
:data:`~kueue_webhook.api.bounds.MAX_DEPTH`. Beyond that the review fails with a message saying what to do
(list
fewer objects at a time, or read v1beta2), which kube-apiserver shows to the client.
"""

from __future__ import annotations

from typing import Any

import orjson

from kueue_webhook.api.bounds import BoundsError, check_body, check_depth, shown
from kueue_webhook.api.conversion import ConversionError, convert_for_answer, expanded_domains, expansion

__all__ = [
    "CONVERSION_API_VERSION",
    "MAX_RESPONSE_BYTES",
    "MAX_REVIEW_DOMAINS",
    "MAX_REVIEW_OBJECTS",
    "ConversionReviewError",
    "answer_review",
    "expands_at_most",
]

CONVERSION_API_VERSION = "apiextensions.k8s.io/v1"
#: v1beta1 topology domains one review may expand to: one Workload at Kueue's largest assignment (the
#: Workload CRD's MaxItems of 100,000 on a slice's ``roots`` and ``podCounts.individual``)
MAX_REVIEW_DOMAINS = 100_000
#: objects one review may hold: the smallest real Kueue object (a ResourceFlavor, with the metadata
#: kube-apiserver keeps) takes ~400 bytes, so a review within the 3 MiB body bound holds fewer than 8,000;
#: each costs a few microseconds, and a list of 200,000 zeros or empty objects would cost a tenth of a second
MAX_REVIEW_OBJECTS = 10_000
#: the level of ``request.objects`` in a ConversionReview (review, request, objects)
_OBJECTS_LEVEL = 3
#: what the expanded domains of one review may add to the answer. v1beta1 stored every domain in the
#: Workload and etcd keeps an object of at most 1.5 MiB (Kueue's TAS design, KEP 2724: "around 20-30k" nodes
#: for real node names), so no v1beta1 reader ever read more; this is five times that, 100,000 domains of
#: three levels of real node names, and is written in ~30 ms
MAX_RESPONSE_BYTES = 8 * 1024 * 1024


class ConversionReviewError(ValueError):
    """The body is not a ConversionReview v1 request, or is beyond the bounds; answered with an HTTP
    ``Status`` of ``code`` (400, 413 above the size bound) and ``reason``."""

    def __init__(self, message: str, *, reason: str = "BadRequest", code: int = 400) -> None:
        super().__init__(message)
        self.reason = reason
        self.code = code


def answer_review(body: bytes) -> bytes:
    """The ConversionReview response to the request ``body``."""
    uid, desired, objects = _parse(body)
    converted = []
    try:
        if len(objects) > MAX_REVIEW_OBJECTS:
            raise ConversionError(
                f"the review holds {len(objects)} objects, more than the {MAX_REVIEW_OBJECTS} one review of "
                "real objects can (3 MiB); list fewer at a time (kubectl --chunk-size)"
            )
        try:
            check_depth(objects, start=_OBJECTS_LEVEL)
        except BoundsError as exc:
            raise ConversionError(str(exc)) from None
        _check_expansion(objects, desired)
        for index, obj in enumerate(objects):
            try:
                converted.append(convert_for_answer(obj, desired))
            except ConversionError as exc:
                raise ConversionError(f"objects[{index}]: {exc}") from exc
    except ConversionError as exc:
        response: dict[str, Any] = {"uid": uid, "result": {"status": "Failure", "message": str(exc)}}
    else:
        response = {"uid": uid, "convertedObjects": converted, "result": {"status": "Success"}}
    return orjson.dumps(
        {"apiVersion": CONVERSION_API_VERSION, "kind": "ConversionReview", "response": response}
    )


def expands_at_most(body: bytes, domains: int) -> bool:
    """Whether answering ``body`` expands at most ``domains`` v1beta1 topology domains (true for a body
    :func:`answer_review` refuses outright: refusing is cheap). Decodes the body: for small bodies only."""
    try:
        _, desired, objects = _parse(body)
        return sum(expanded_domains(obj, desired) for obj in objects) <= domains
    except (ConversionReviewError, ConversionError):
        return True


def _check_expansion(objects: list[Any], desired: str) -> None:
    """Refuse, before converting any, a review whose objects would expand beyond the review's budget."""
    domains = size = 0
    for index, obj in enumerate(objects):
        try:
            more_domains, more_bytes = expansion(obj, desired)
        except ConversionError as exc:
            raise ConversionError(f"objects[{index}]: {exc}") from exc
        domains, size = domains + more_domains, size + more_bytes
        if domains > MAX_REVIEW_DOMAINS or size > MAX_RESPONSE_BYTES:
            raise ConversionError(
                f"objects[0..{index}] expand to more than {MAX_REVIEW_DOMAINS} v1beta1 topology domains or "
                f"{MAX_RESPONSE_BYTES} bytes; list fewer Workloads at a time (kubectl --chunk-size) or read "
                "them as kueue.x-k8s.io/v1beta2"
            )


def _parse(body: bytes) -> tuple[str, str, list[Any]]:
    try:
        check_body(body)
    except BoundsError as exc:
        raise ConversionReviewError(str(exc), reason=exc.reason, code=exc.code) from None
    try:
        review = orjson.loads(body)
    except orjson.JSONDecodeError as exc:
        raise ConversionReviewError(f"request body is not JSON: {exc}") from exc
    if not isinstance(review, dict):
        raise ConversionReviewError("request body must be a JSON object (a ConversionReview)")
    if review.get("kind") != "ConversionReview" or review.get("apiVersion") != CONVERSION_API_VERSION:
        raise ConversionReviewError(
            f"expected a ConversionReview of apiVersion {CONVERSION_API_VERSION}, got kind "
            f"{shown(review.get('kind'))} apiVersion {shown(review.get('apiVersion'))}"
        )
    request = review.get("request")
    if not isinstance(request, dict):
        raise ConversionReviewError("ConversionReview has no request")
    uid = request.get("uid")
    if not isinstance(uid, str) or not uid:
        raise ConversionReviewError("ConversionReview request.uid must be a non-empty string")
    desired = request.get("desiredAPIVersion")
    if not isinstance(desired, str) or not desired:
        raise ConversionReviewError("ConversionReview request.desiredAPIVersion must be a non-empty string")
    objects = request.get("objects")
    if not isinstance(objects, list):
        raise ConversionReviewError("ConversionReview request.objects must be a list")
    return uid, desired, objects
