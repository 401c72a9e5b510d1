"""What the end-to-end benchmarks share (on the fake API server, ``bench.e2e``, and on a real one,
``bench.e2e_real``): the Job they queue, and the nearest-rank p99 their latencies are read with."""

from __future__ import annotations

from typing import Any

JSON = dict[str, Any]


def job(name: str, queue: str, namespace: str = "bench") -> JSON:
    """A one-GPU Job for ``queue``, suspended and queue-labelled as the admission webhook leaves one."""
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": name, "namespace": namespace, "labels": {"kueue.x-k8s.io/queue-name": queue}},
        "spec": {
            "suspend": True,
            "template": {
                "spec": {
                    "restartPolicy": "Never",
                    "containers": [
                        {"name": "c", "image": "busybox", "resources": {"limits": {"nvidia.com/gpu": "1"}}}
                    ],
                }
            },
        },
    }


def p99(ordered: list[float]) -> float:
    """The nearest-rank p99 of sorted values: of 200 samples, the second-worst."""
    return ordered[max(0, round(0.99 * len(ordered)) - 1)]
