"""The made-up ``example.com/v1`` TrainingRun CRD (``declared/trainingruns.yaml``), its declaration for
``integrations.declaredKinds`` (``declared/declaration.yaml``) and a TrainingRun manifest, shared by the fake
API server and real control plane tests of declared kinds."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

HERE = Path(__file__).resolve().parent / "declared"
CRD_FILE = HERE / "trainingruns.yaml"
PLURAL = "trainingruns.example.com"


def crd() -> dict[str, Any]:
    loaded: dict[str, Any] = yaml.safe_load(CRD_FILE.read_text())
    return loaded


def declaration() -> dict[str, Any]:
    loaded: dict[str, Any] = yaml.safe_load((HERE / "declaration.yaml").read_text())
    return loaded


def config_yaml(frameworks: str = "[batch/job]", *, declared: bool = True) -> str:
    """A config.yaml with ``frameworks`` on and, when ``declared``, the TrainingRun declared."""
    integrations: dict[str, Any] = {"frameworks": yaml.safe_load(frameworks)}
    if declared:
        integrations["declaredKinds"] = [declaration()]
    return yaml.safe_dump({"integrations": integrations}, sort_keys=False)


def training_run(
    name: str,
    namespace: str,
    *,
    queue: str,
    gpus: int = 1,
    workers: int = 2,
    trainer: tuple[int, int] | None = None,
) -> dict[str, Any]:
    """A TrainingRun of one launcher pod (requesting nothing) and ``workers`` pods of ``gpus`` GPUs each;
    ``trainer`` (replicas, minReplicas) replaces the workers with an elastic trainer pod set."""

    def template(count: int) -> dict[str, Any]:
        container: dict[str, Any] = {"name": "c", "image": "busybox"}
        if count:
            container["resources"] = {"limits": {"nvidia.com/gpu": str(count)}}
        return {"spec": {"restartPolicy": "Never", "containers": [container]}}

    spec: dict[str, Any] = {"launcher": {"replicas": 1, "template": template(0)}}
    if trainer is None:
        spec["workers"] = [{"name": "gpu", "replicas": workers, "template": template(gpus)}]
    else:
        replicas, min_replicas = trainer
        spec["trainer"] = {"replicas": replicas, "minReplicas": min_replicas, "template": template(gpus)}
    return {
        "apiVersion": "example.com/v1",
        "kind": "TrainingRun",
        "metadata": {"name": name, "namespace": namespace, "labels": {"kueue.x-k8s.io/queue-name": queue}},
        "spec": spec,
    }
