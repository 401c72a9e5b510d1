"""Who the controller is, asked of the API server: a SelfSubjectReview at start.

The validating webhook lets only the controller start a queued Job, and recognises it by the user name in
each AdmissionReview. Configuring that name (``controllerIdentity.username``) is right in a pod, whose
service account is known in advance, and wrong whenever the controller runs with other credentials: out of
cluster with an admin kubeconfig, every start would be refused and every admitted Job stay suspended. So at
start the controller asks ``POST /apis/authentication.k8s.io/v1/selfsubjectreviews`` (GA since Kubernetes
v1.28, allowed to every authenticated user by the default ``system:basic-user`` role) and the webhook trusts
the answer as well as the configured name. Replicas agree without talking: they share credentials, so the
API server tells each the same name.

An API server that refuses the review (404 before v1.28, 403 where the default role was removed) leaves the
configured name alone in force, and the log says why. Transient failures (5xx, 429, no connection) are
retried with backoff: the informers cannot start either until the server answers.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any, Protocol

import aiohttp

from kueue_webhook.control.kube.backoff import Backoff
from kueue_webhook.control.kube.client import ApiError

JSON = dict[str, Any]
log = logging.getLogger("kueue_webhook.identity")
SELF_SUBJECT_REVIEWS = "/apis/authentication.k8s.io/v1/selfsubjectreviews"
REVIEW = {"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"}


class ReviewClient(Protocol):
    async def request(self, method: str, path: str, *, body: Any = ..., timeout: float = ...) -> JSON: ...


async def own_username(client: ReviewClient, *, backoff: Backoff | None = None) -> str | None:
    """The user name the API server sees for this client's credentials; None when it will not say."""
    backoff = backoff or Backoff(base=0.2, cap=10.0)
    while True:
        try:
            review = await client.request("POST", SELF_SUBJECT_REVIEWS, body=REVIEW, timeout=10.0)
        except ApiError as exc:
            if exc.status == 429 or exc.status >= 500:
                await _retry_after(backoff, exc)
                continue
            log.warning(
                "the API server did not say who the controller is; only controllerIdentity.username may "
                "start queued Jobs",
                extra={"status": exc.status, "reason": exc.reason, "error": exc.message},
            )
            return None
        except (aiohttp.ClientError, TimeoutError) as exc:
            await _retry_after(backoff, exc)
            continue
        username = ((review.get("status") or {}).get("userInfo") or {}).get("username")
        if not isinstance(username, str) or not username:
            log.warning(
                "the SelfSubjectReview answer names no user; only controllerIdentity.username may start "
                "queued Jobs",
                extra={"answer": str(review)[:500]},
            )
            return None
        log.info("controller identity", extra={"username": username, "source": "SelfSubjectReview"})
        return username


async def _retry_after(backoff: Backoff, exc: BaseException) -> None:
    delay = backoff.next_delay()
    log.warning("asking the API server who the controller is failed, retrying in %.1fs: %r", delay, exc)
    await asyncio.sleep(delay)
