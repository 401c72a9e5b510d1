"""The e2e modules' controller: ``kueue-webhook serve`` out of cluster on the real API server, one per module.

A module says what its controller needs with ``pytestmark = [..., with_controller(ControllerSetup(...))]``:
its name (the work directory and the tests' id), CRDs to install before it starts (and delete after), and
configuration to apply live once it serves (put back as shipped after the module). The ``controller``
fixture then yields ``(cluster, running)``; a module that says nothing gets the shipped setup.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.e2e.cluster import KUBECONFIG, Cluster
from tests.e2e.install import Running, out_of_cluster
from tests.e2e.queues import configure


@dataclass(frozen=True)
class ControllerSetup:
    name: str
    #: YAML appended to the shipped config.yaml and applied once the controller serves; "" keeps it as shipped
    config: str = ""
    #: creates CRDs before the controller starts; returns the names of those to delete afterwards
    crds: Callable[[Cluster], Sequence[str]] | None = None


def with_controller(setup: ControllerSetup) -> pytest.MarkDecorator:
    """The module's ``controller`` fixture made to ``setup``."""
    return pytest.mark.parametrize("controller", [setup], indirect=True, ids=[setup.name])


@pytest.fixture(scope="module")
def controller(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[Cluster, Running]]:
    default = ControllerSetup(request.module.__name__.rpartition(".")[2].removeprefix("test_"))
    setup: ControllerSetup = getattr(request, "param", default)
    cluster = Cluster(Path(KUBECONFIG))
    created = setup.crds(cluster) if setup.crds is not None else ()
    try:
        with out_of_cluster(cluster, tmp_path_factory.mktemp(setup.name)) as running:
            configure(cluster, running, setup.config)
            try:
                yield cluster, running
            finally:
                configure(cluster, running, "")
    finally:
        if created:
            cluster.kubectl("delete", "crd", *created, "--ignore-not-found", "--timeout=120s", check=False)
