"""PromQL as the dashboard and the alert rules write it: parsed with ``promql-parser`` (the Prometheus
parser's grammar), with the metric names and labels each expression reads, checked against what the
controller's registry exports."""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import promql_parser
from prometheus_client import CollectorRegistry

from kueue_webhook.admission.view import StaticClusterView
from kueue_webhook.api.config import Configuration
from kueue_webhook.control.output.metrics import Metrics
from kueue_webhook.http.app import create_app

#: Grafana's interval variables stand where a duration goes; any other variable stands inside a label value
_GRAFANA_INTERVAL = re.compile(r"\$__(rate_interval|interval|range)\b|\$\{__(rate_interval|interval|range)\}")
_GRAFANA_VARIABLE = re.compile(r"\$\{?\w+\}?")


def without_grafana_variables(expr: str) -> str:
    return _GRAFANA_VARIABLE.sub("x", _GRAFANA_INTERVAL.sub("5m", expr))


@dataclass
class Reads:
    """The series an expression selects: metric name -> label names its matchers and ``by`` clauses use."""

    labels: dict[str, set[str]] = field(default_factory=dict)


def _children(node: Any) -> Iterator[Any]:
    for attribute in ("expr", "lhs", "rhs", "param", "vector_selector"):
        child = getattr(node, attribute, None)
        if child is not None:
            yield child
    yield from getattr(node, "args", None) or ()


def _selectors(node: Any) -> Iterator[Any]:
    if isinstance(node, promql_parser.VectorSelector):
        yield node
    for child in _children(node):
        yield from _selectors(child)


def _name(selector: Any) -> str:
    if selector.name:
        return str(selector.name)
    names = [m.value for m in selector.matchers.matchers if m.name == "__name__"]
    assert names, f"selector without a metric name: {selector}"
    return str(names[0])


def reads(expr: str) -> Reads:
    """Parse ``expr`` (raising ValueError on a syntax error) and list what it reads."""
    tree = promql_parser.parse(expr)
    out = Reads()
    for selector in _selectors(tree):
        out.labels.setdefault(_name(selector), set()).update(
            m.name for m in selector.matchers.matchers if m.name != "__name__"
        )
    stack = [tree]
    while stack:
        node = stack.pop()
        modifier = getattr(node, "modifier", None) if isinstance(node, promql_parser.AggregateExpr) else None
        if modifier is not None and modifier.type == promql_parser.AggModifierType.By:
            for selector in _selectors(node.expr):
                out.labels[_name(selector)].update(modifier.labels)
        stack.extend(_children(node))
    return out


def exported() -> dict[str, set[str]]:
    """Series name -> label names, as the HTTPS port's /metrics serves them: the controller's metrics and
    the server's (admission, serving certificate) on one registry, built as ``wiring.build`` builds it."""
    metrics = Metrics()
    create_app(view=StaticClusterView(), config=Configuration, registry=metrics.registry)
    return series_of(metrics.registry)


def series_of(registry: CollectorRegistry) -> dict[str, set[str]]:
    out: dict[str, set[str]] = {}
    for family in registry.collect():
        # the label names of a metric with no child yet are known only to its collector
        collector = registry._names_to_collectors.get(family.name)
        labels = set(getattr(collector, "_labelnames", ()))
        if family.type == "counter":
            out[family.name + "_total"] = labels
        elif family.type == "histogram":
            for suffix in ("_bucket", "_sum", "_count"):
                out[family.name + suffix] = labels | ({"le"} if suffix == "_bucket" else set())
        else:
            out[family.name] = labels
    return out
