"""Status bodies exactly as kube-apiserver writes them.

Clients branch on `reason` and `code` (client-go's `IsConflict`, `IsNotFound`, kubectl's error printer), so
every failure leaves the fake as an `ApiError` that renders to the same `Status` object the real server sends;
handlers raise, the HTTP layer renders. Messages follow the apiserver's wording word for word (see the golden
`error-*.json` captures), because tests and users match on them.
"""

from __future__ import annotations

from typing import Any


class ApiError(Exception):
    """A request that kube-apiserver would refuse, carrying the Status body it would send."""

    def __init__(
        self,
        *,
        code: int,
        reason: str,
        message: str,
        details: dict[str, Any] | None = None,
    ) -> None:
        super().__init__(message)
        self.code = code
        self.reason = reason
        self.message = message
        self.details = details

    def status(self) -> dict[str, Any]:
        body: dict[str, Any] = {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": self.message,
            "reason": self.reason,
        }
        if self.details is not None:
            body["details"] = self.details
        body["code"] = self.code
        return body


def qualified(plural: str, group: str) -> str:
    """`jobs.batch`, or `configmaps` for the core group: how the apiserver names a resource in messages."""
    return f"{plural}.{group}" if group else plural


def not_found(*, plural: str, group: str, name: str) -> ApiError:
    return ApiError(
        code=404,
        reason="NotFound",
        message=f'{qualified(plural, group)} "{name}" not found',
        details={"name": name, "group": group, "kind": plural},
    )


def already_exists(*, plural: str, group: str, name: str) -> ApiError:
    return ApiError(
        code=409,
        reason="AlreadyExists",
        message=f'{qualified(plural, group)} "{name}" already exists',
        details={"name": name, "group": group, "kind": plural},
    )


def conflict(*, plural: str, group: str, name: str) -> ApiError:
    return ApiError(
        code=409,
        reason="Conflict",
        message=(
            f'Operation cannot be fulfilled on {qualified(plural, group)} "{name}": '
            "the object has been modified; "
            "please apply your changes to the latest version and try again"
        ),
        details={"name": name, "group": group, "kind": plural},
    )


def invalid(*, kind: str, group: str, name: str, causes: list[dict[str, str]]) -> ApiError:
    """422 with one cause per field error; the message lists them like apimachinery's aggregate does (which
    names a repeated error once, while the causes keep every copy)."""
    each = (f"{c['field']}: {c['message']}" if c.get("field") else c["message"] for c in causes)
    texts = list(dict.fromkeys(each))
    summary = texts[0] if len(texts) == 1 else "[" + ", ".join(texts) + "]"
    qualified_kind = f"{kind}.{group}" if group else kind
    # StatusDetails.group is omitempty: the core group's kinds have none (golden pod-update-*)
    details = {"name": name, **({"group": group} if group else {}), "kind": kind, "causes": causes}
    return ApiError(
        code=422,
        reason="Invalid",
        message=f'{qualified_kind} "{name}" is invalid: {summary}',
        details=details,
    )


def bad_request(message: str) -> ApiError:
    return ApiError(code=400, reason="BadRequest", message=message)


def unprocessable_patch() -> ApiError:
    """What a failed JSON Patch `test` op (or any patch that cannot apply) answers."""
    return ApiError(
        code=422,
        reason="Invalid",
        message="the server rejected our request due to an error in our request",
        details={},
    )


def namespace_not_found(namespace: str) -> ApiError:
    return not_found(plural="namespaces", group="", name=namespace)


def namespace_terminating(*, namespace: str, plural: str, group: str, name: str) -> ApiError:
    return ApiError(
        code=403,
        reason="Forbidden",
        message=(
            f'{qualified(plural, group)} "{name}" is forbidden: unable to create new content in namespace '
            f"{namespace} because it is being terminated"
        ),
        details={
            "name": name,
            "group": group,
            "kind": plural,
            "causes": [
                {
                    "reason": "NamespaceTerminating",
                    "message": f"namespace {namespace} is being terminated",
                    "field": "metadata.namespace",
                }
            ],
        },
    )


def expired(message: str) -> ApiError:
    return ApiError(code=410, reason="Expired", message=message)


def unauthorized() -> ApiError:
    return ApiError(code=401, reason="Unauthorized", message="Unauthorized")


def method_not_allowed() -> ApiError:
    """As golden selfsubjectreview-list-not-allowed.json shows it (empty details included)."""
    return ApiError(
        code=405,
        reason="MethodNotAllowed",
        message="the server does not allow this method on the requested resource",
        details={},
    )


def internal(message: str) -> ApiError:
    return ApiError(code=500, reason="InternalError", message=f"Internal error occurred: {message}")


def resource_not_found() -> ApiError:
    return ApiError(
        code=404, reason="NotFound", message="the server could not find the requested resource", details={}
    )
