"""The observability component (manifests/components/observability): the Grafana dashboard loads with the
fields Grafana's dashboard model needs, every PromQL expression in it and in the alert rules parses and
reads only series the controller exports (names and labels, from its real registry), the ServiceMonitor
points at the Service, Secret and role the install really has, and the overlay renders."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from kueue_webhook.http.certs import service_dns_names
from tests.unit.deploy.promql import exported, reads, without_grafana_variables
from tests.unit.deploy.rendering import MANIFESTS, OBSERVABILITY, keyed, kustomize, load_yaml_documents

DASHBOARD = OBSERVABILITY / "kueue-webhook-dashboard.json"
RULES = OBSERVABILITY / "prometheusrule.yaml"


def dashboard() -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads(DASHBOARD.read_text())
    return loaded


def panels() -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for panel in dashboard()["panels"]:
        out.append(panel)
        out.extend(panel.get("panels", []))  # a collapsed row keeps its panels inside
    return out


def dashboard_expressions() -> list[str]:
    return [t["expr"] for p in panels() for t in p.get("targets", [])]


def rule_expressions() -> list[str]:
    [rule] = load_yaml_documents(RULES)
    return [r["expr"] for group in rule["spec"]["groups"] for r in group["rules"]]


def variable_queries() -> list[str]:
    return [v["definition"] for v in dashboard()["templating"]["list"] if v["type"] == "query"]


def test_dashboard_has_the_fields_grafana_needs() -> None:
    board = dashboard()
    assert board["uid"] == "kueue-webhook" and len(board["uid"]) <= 40  # Grafana's uid limit
    assert isinstance(board["schemaVersion"], int) and board["schemaVersion"] >= 36
    assert board["title"] and {"from", "to"} <= set(board["time"])
    ids = [p["id"] for p in panels()]
    assert len(ids) == len(set(ids)), "panel ids must be unique"
    for panel in panels():
        assert {"id", "type", "title", "gridPos"} <= set(panel), panel["title"]
        grid = panel["gridPos"]
        assert {"h", "w", "x", "y"} <= set(grid) and grid["x"] >= 0 and grid["x"] + grid["w"] <= 24
        if panel["type"] == "row":
            continue
        assert panel["datasource"] == {"type": "prometheus", "uid": "${datasource}"}
        assert panel["targets"], f"{panel['title']} has no query"
        ref_ids = [t["refId"] for t in panel["targets"]]
        assert len(ref_ids) == len(set(ref_ids)) and all(t["expr"] for t in panel["targets"])
    names = {v["name"] for v in board["templating"]["list"]}
    used = {m for e in dashboard_expressions() for m in re.findall(r"\$\{?(\w+)", e)}
    assert used - {"__rate_interval", "__range", "__interval"} <= names, "undefined dashboard variable"


def test_no_two_panels_overlap() -> None:
    cells: dict[tuple[int, int], str] = {}
    for panel in panels():
        grid = panel["gridPos"]
        for x in range(grid["x"], grid["x"] + grid["w"]):
            for y in range(grid["y"], grid["y"] + grid["h"]):
                assert (x, y) not in cells, f"{panel['title']} overlaps {cells[(x, y)]}"
                cells[(x, y)] = panel["title"]


def test_the_dashboard_covers_what_operators_ask_for() -> None:
    titles = " | ".join(p["title"] for p in panels()).lower()
    for topic in ("usage / nominal quota", "pending", "p50 / p95", "preemption", "gpu-hours"):
        assert topic in titles


@pytest.mark.parametrize(
    "expr",
    [pytest.param(e, id=f"dashboard-{i}") for i, e in enumerate(dashboard_expressions())]
    + [pytest.param(e, id=f"rule-{i}") for i, e in enumerate(rule_expressions())],
)
def test_every_expression_parses_and_reads_only_exported_series(expr: str) -> None:
    series = exported()
    for name, labels in reads(without_grafana_variables(expr)).labels.items():
        assert name in series, f"{name} is not exported by the controller"
        assert labels <= series[name], f"{name} has no label {labels - series[name]}"


def test_a_misspelt_metric_or_label_or_a_syntax_error_is_caught() -> None:
    series = exported()
    assert "kueue_pending_workload" not in series
    assert "cluster_queue" not in series["kueue_preempted_workloads_total"]  # it is preempting_cluster_queue
    with pytest.raises(ValueError):
        reads("sum(rate(kueue_admitted_workloads_total[5m])")


def test_variable_queries_read_exported_series() -> None:
    series = exported()
    for query in variable_queries():
        match = re.fullmatch(r"label_values\((\w+), (\w+)\)", query)
        assert match, query
        assert match[2] in series[match[1]]


def test_alerts_cover_leader_errors_wait_and_certificate() -> None:
    [rule] = load_yaml_documents(RULES)
    alerts = {r["alert"]: r for group in rule["spec"]["groups"] for r in group["rules"]}
    assert "kueue_webhook_leader" in alerts["KueueWebhookNoLeader"]["expr"]
    assert "kueue_webhook_admission_requests_total" in alerts["KueueWebhookAdmissionErrors"]["expr"]
    assert "kueue_admission_wait_time_seconds_bucket" in alerts["KueueWebhookAdmissionWaitHigh"]["expr"]
    assert (
        "kueue_webhook_serving_certificate_expiry_seconds"
        in alerts["KueueWebhookCertificateExpiring"]["expr"]
    )
    for entry in alerts.values():
        assert entry["labels"]["severity"] in {"warning", "critical"}
        assert entry["annotations"]["summary"] and entry["annotations"]["description"]


def test_servicemonitor_scrapes_the_service_port_with_the_serving_ca() -> None:
    controller = {
        (d["kind"], d["metadata"]["name"]): d
        for path in (MANIFESTS / "controller").glob("*.yaml")
        if path.name != "kustomization.yaml"
        for d in load_yaml_documents(path)
    }
    [monitor] = load_yaml_documents(OBSERVABILITY / "servicemonitor.yaml")
    service = controller[("Service", "kueue-webhook")]
    assert monitor["spec"]["selector"]["matchLabels"].items() <= service["metadata"]["labels"].items()
    [endpoint] = monitor["spec"]["endpoints"]
    assert endpoint["port"] in {p["name"] for p in service["spec"]["ports"]}
    assert endpoint["scheme"] == "https" and endpoint["path"] == "/metrics"
    volumes = controller[("Deployment", "kueue-webhook")]["spec"]["template"]["spec"]["volumes"]
    assert endpoint["tlsConfig"]["ca"]["secret"]["name"] in {
        v["secret"]["secretName"] for v in volumes if "secret" in v
    }
    # a name `kueue-webhook certs` puts in the serving certificate
    assert endpoint["tlsConfig"]["serverName"] in service_dns_names("kueue-webhook", "kueue-system")
    binding = next(
        d
        for d in load_yaml_documents(OBSERVABILITY / "prometheus-rbac.yaml")
        if d["kind"] == "ClusterRoleBinding"
    )
    reader = controller[("ClusterRole", "kueue-webhook-metrics-reader")]
    assert binding["roleRef"]["name"] == reader["metadata"]["name"]
    assert reader["rules"] == [{"nonResourceURLs": ["/metrics"], "verbs": ["get"]}]


def test_the_overlay_renders_the_install_plus_the_component() -> None:
    base = keyed(kustomize(MANIFESTS))
    overlay = keyed(kustomize(MANIFESTS / "observability"))
    assert {k: overlay[k] for k in base} == base  # the install itself unchanged
    added = {k: v for k, v in overlay.items() if k not in base}
    assert {k[:2] for k in added} == {
        ("ClusterRoleBinding", ""),
        ("Role", "kueue-system"),
        ("RoleBinding", "kueue-system"),
        ("ServiceMonitor", "kueue-system"),
        ("PrometheusRule", "kueue-system"),
        ("ConfigMap", "kueue-system"),
    }
    config_map = added[("ConfigMap", "kueue-system", "kueue-webhook-dashboard")]
    assert config_map["metadata"]["labels"]["grafana_dashboard"] == "1"
    assert json.loads(config_map["data"]["kueue-webhook-dashboard.json"]) == dashboard()
