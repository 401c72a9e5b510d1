"""``kueue-webhook simulate`` with Nodes and a Topology: an admin sees where each rack-bound Job would land
and which one would wait for a rack with room."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kueue_webhook.cli import main

SCENARIO = (
    """
apiVersion: kueue.x-k8s.io/v1beta2
kind: Topology
metadata: {name: default}
spec:
  levels: [{nodeLabel: cloud.example.com/rack}, {nodeLabel: kubernetes.io/hostname}]
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ResourceFlavor
metadata: {name: tas}
spec: {nodeLabels: {pool: tas}, topologyName: default}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata: {name: cq}
spec:
  namespaceSelector: {}
  resourceGroups:
  - coveredResources: [cpu]
    flavors: [{name: tas, resources: [{name: cpu, nominalQuota: 100}]}]
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: LocalQueue
metadata: {name: q, namespace: ml}
spec: {clusterQueue: cq}
"""
    + "".join(
        f"""---
apiVersion: v1
kind: Node
metadata:
  name: {host}
  labels: {{pool: tas, cloud.example.com/rack: {rack}, kubernetes.io/hostname: {host}}}
status:
  allocatable: {{cpu: "{cpu}", pods: "110"}}
  conditions: [{{type: Ready, status: "True"}}]
"""
        for host, rack, cpu in (("a1", "a", 2), ("a2", "a", 1), ("b1", "b", 2), ("b2", "b", 2))
    )
    + "".join(
        f"""---
apiVersion: batch/v1
kind: Job
metadata:
  name: {name}
  namespace: ml
  labels: {{kueue.x-k8s.io/queue-name: q}}
  annotations: {{simulate.kueue-webhook/arrival: "{arrival}", simulate.kueue-webhook/runtime: 1h}}
spec:
  parallelism: 4
  completions: 4
  template:
    metadata:
      annotations: {{kueue.x-k8s.io/podset-required-topology: cloud.example.com/rack}}
    spec:
      restartPolicy: Never
      containers: [{{name: c, image: busybox, resources: {{requests: {{cpu: "1"}}}}}}]
"""
        for name, arrival in (("first", "0s"), ("second", "1s"))
    )
)


def test_simulate_places_rack_jobs_on_the_nodes_and_says_who_waits_for_a_rack(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    scenario = tmp_path / "racks.yaml"
    scenario.write_text(SCENARIO)
    assert main(["simulate", "-o", "json", "--at", "10s", str(scenario)]) == 0
    rows = {w["name"].rsplit("-", 1)[0]: w for w in json.loads(capsys.readouterr().out)["workloads"]}
    first, second = rows["job-first"], rows["job-second"]
    assert first["admitted"]
    assert first["topology"] == {
        "main": {
            "levels": ["kubernetes.io/hostname"],
            "domains": [{"values": ["b1"], "count": 2}, {"values": ["b2"], "count": 2}],
        }
    }
    assert not second["admitted"]
    assert second["pending"]["message"] == (
        'couldn\'t assign flavors to pod set main: topology "default" allows to fit only 3 out of 4 pod(s). '
        'Total nodes: 4; excluded: resource "cpu": 2'
    )
