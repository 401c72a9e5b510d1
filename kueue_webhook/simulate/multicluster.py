"""Several clusters in one replay: a MultiKueue manager and its workers, with no cluster at all.

A scenario describes a MultiKueue layout with the objects a manager holds (MultiKueueClusters, a
MultiKueueConfig, an AdmissionCheck with ``controllerName: kueue.x-k8s.io/multikueue``, a ClusterQueue that
lists the check) plus, for each worker, **a ClusterQueue named like its MultiKueueCluster** holding the
worker's quota. The replay then plays Kueue's all-at-once dispatcher: once the manager's ClusterQueue
reserves quota, a copy of the Workload queues in every listed worker's ClusterQueue; the first worker to
admit it runs it (the Workload is admitted from then on, and its runtime counts from there) and the other
copies are withdrawn. The worker's ClusterQueue shows the worker's usage like any other.

Only the routing is decided here, from the scenario; ``replay`` moves the copies.
"""

from __future__ import annotations

from collections.abc import Mapping

from kueue_webhook.simulate.scenario import Scenario, SimulationError

__all__ = ["copy_name", "worker_routes"]


def worker_routes(scenario: Scenario) -> dict[str, tuple[str, ...]]:
    """ClusterQueue name -> the worker ClusterQueues its MultiKueue check dispatches to, in the config's
    order (clusters the input does not declare as MultiKueueClusters are skipped, as missing clusters are
    by Kueue's dispatcher); empty when no ClusterQueue uses a MultiKueue check."""
    queues = {queue.name: queue for queue in scenario.cluster_queues}
    routes: dict[str, tuple[str, ...]] = {}
    for queue in scenario.cluster_queues:
        for check in queue.admission_checks:
            config = scenario.multikueue_checks.get(check)
            if config is None:
                continue
            listed = scenario.multikueue_configs.get(config)
            if listed is None:
                raise SimulationError(
                    f"AdmissionCheck {check}: MultiKueueConfig {config} is not in the input"
                )
            workers = tuple(name for name in listed if name in scenario.multikueue_clusters)
            for worker in workers:
                if worker not in queues:
                    raise SimulationError(
                        f"MultiKueueCluster {worker}: simulate needs a ClusterQueue named {worker} "
                        "with the worker's quota"
                    )
                if worker == queue.name:
                    raise SimulationError(f"ClusterQueue {worker} cannot dispatch to itself")
            if not workers:
                raise SimulationError(
                    f"MultiKueueConfig {config}: none of its clusters is a MultiKueueCluster in the input"
                )
            routes[queue.name] = workers
            break
    _no_chains(routes)
    return routes


def _no_chains(routes: Mapping[str, tuple[str, ...]]) -> None:
    for queue, workers in routes.items():
        for worker in workers:
            if worker in routes:
                raise SimulationError(
                    f"ClusterQueue {worker} is a worker of {queue} and dispatches too: one level only"
                )


def copy_name(name: str, worker: str) -> str:
    """The copy's name in the single simulated state (on the worker it keeps the Workload's own name)."""
    return f"{name}@{worker}"
