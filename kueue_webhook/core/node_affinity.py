"""A pod template's required node affinity (``requiredDuringSchedulingIgnoredDuringExecution``) read against
labels: a ResourceFlavor's ``nodeLabels`` when a flavor is chosen, a Node's labels and name when
topology-aware scheduling places pods (Kueue filters nodes by it, counting those it excludes as
``affinity``).

A term is a tuple of ``(key, operator, values)`` requirements, ANDed; the terms of a pod set are ORed. A
``matchFields`` requirement is kept with its field prefixed by ``FIELD`` (``field:metadata.name``), which no
label key can be, so label-only readers pass over it.
"""

from __future__ import annotations

from collections.abc import Mapping

__all__ = ["FIELD", "Requirement", "Term", "node_matches", "requirement_holds"]

FIELD = "field:"
Requirement = tuple[str, str, tuple[str, ...]]
Term = tuple[Requirement, ...]


def requirement_holds(labels: Mapping[str, str], key: str, operator: str, values: tuple[str, ...]) -> bool:
    """Kubernetes' node selector requirement on ``labels`` (In, NotIn, Exists, DoesNotExist, Gt, Lt)."""
    present = key in labels
    if operator == "In":
        return present and labels[key] in values
    if operator == "NotIn":
        return not present or labels[key] not in values
    if operator == "Exists":
        return present
    if operator == "DoesNotExist":
        return not present
    if operator in ("Gt", "Lt") and present and len(values) == 1:
        try:
            have, want = int(labels[key]), int(values[0])
        except ValueError:
            return False
        return have > want if operator == "Gt" else have < want
    return False


def node_matches(labels: Mapping[str, str], name: str, terms: tuple[Term, ...]) -> bool:
    """Whether a Node of ``labels`` and ``name`` satisfies some term (no terms: any node does). A term
    with no requirement matches no node, as in Kubernetes; a field requirement reads the node's name."""
    if not terms:
        return True
    fields = {f"{FIELD}metadata.name": name}
    return any(
        term
        and all(
            requirement_holds(fields if key.startswith(FIELD) else labels, key, operator, values)
            for key, operator, values in term
        )
        for term in terms
    )
