"""ConversionReview ``apiextensions.k8s.io/v1`` in, ConversionReview out: what ``/convert`` speaks.

kube-apiserver posts ``request: {uid, desiredAPIVersion, objects}`` and expects ``response: {uid,
convertedObjects, result}`` with the objects in the same order. As with admission, two failures are kept
apart: a body that is not a ConversionReview at all raises :class:`ConversionReviewError` (the server answers
HTTP 400 with its message); a review whose objects cannot be converted is answered with ``result: {status:
Failure, message}``, which kube-apiserver passes on to the client, and nothing is converted.
"""

from __future__ import annotations

from typing import Any

import orjson

from webhook.api.conversion import ConversionError, convert

__all__ = ["CONVERSION_API_VERSION", "ConversionReviewError", "answer_review"]

CONVERSION_API_VERSION = "apiextensions.k8s.io/v1"


class ConversionReviewError(ValueError):
    """The body is not a ConversionReview v1 request; answered with HTTP 400."""


def answer_review(body: bytes) -> bytes:
    """The ConversionReview response to the request ``body``."""
    uid, desired, objects = _parse(body)
    converted = []
    try:
        for index, obj in enumerate(objects):
            try:
                converted.append(convert(obj, desired))
            except ConversionError as exc:
                raise ConversionError(f"objects[{index}]: {exc}") from exc
    except ConversionError as exc:
        response: dict[str, Any] = {"uid": uid, "result": {"status": "Failure", "message": str(exc)}}
    else:
        response = {"uid": uid, "convertedObjects": converted, "result": {"status": "Success"}}
    return orjson.dumps(
        {"apiVersion": CONVERSION_API_VERSION, "kind": "ConversionReview", "response": response}
    )


def _parse(body: bytes) -> tuple[str, str, list[Any]]:
    try:
        review = orjson.loads(body)
    except orjson.JSONDecodeError as exc:
        raise ConversionReviewError(f"request body is not JSON: {exc}") from exc
    if not isinstance(review, dict):
        raise ConversionReviewError("request body must be a JSON object (a ConversionReview)")
    if review.get("kind") != "ConversionReview" or review.get("apiVersion") != CONVERSION_API_VERSION:
        raise ConversionReviewError(
            f"expected a ConversionReview of apiVersion {CONVERSION_API_VERSION}, got kind "
            f"{review.get('kind')!r} apiVersion {review.get('apiVersion')!r}"
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
