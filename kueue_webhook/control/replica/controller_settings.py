"""How a replica campaigns for the Lease and paces its work: ``ControllerSettings``, ``serve``'s defaults.

Kept apart from the ``Controller`` it configures because the command line (``main``), the wiring, tests
and benchmarks all build settings, while only the wiring builds a controller.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from kueue_webhook.api.objects.multikueue import KUBECONFIG_PATH_PREFIX
from kueue_webhook.control.kube.leader import LEASE_DURATION, RENEW_DEADLINE, RETRY_PERIOD
from kueue_webhook.control.multikueue.clusters import FILE_POLL_SECONDS, RETRY_BASE, RETRY_CAP
from kueue_webhook.control.multikueue.dispatcher import DispatchSettings

#: the least time between two queue status (or fair-sharing) passes, in seconds
STATUS_INTERVAL = 1.0
#: the server-side timeout of each watch request; the informer then resumes from where it was
WATCH_TIMEOUT_SECONDS = 290


@dataclass(frozen=True, slots=True)
class ControllerSettings:
    """How a replica campaigns for the Lease and paces its work; the defaults are ``serve``'s."""

    leader_election: bool = True
    lease_duration: float = LEASE_DURATION
    renew_deadline: float = RENEW_DEADLINE
    retry_period: float = RETRY_PERIOD
    status_interval: float = STATUS_INTERVAL
    watch_timeout_seconds: int = WATCH_TIMEOUT_SECONDS
    #: MultiKueue: the first delay before reconnecting to a worker (doubling up to the cap, jittered)
    multikueue_retry_base: float = RETRY_BASE
    multikueue_retry_cap: float = RETRY_CAP
    #: MultiKueue: where ``locationType: Path`` kubeconfigs must be, and how often they are looked at
    multikueue_kubeconfig_dir: Path = Path(KUBECONFIG_PATH_PREFIX)
    multikueue_file_poll: float = FILE_POLL_SECONDS
    #: MultiKueue dispatch timings and names; None: the configuration's ``multiKueue`` (live)
    multikueue: DispatchSettings | None = None


DEFAULT_SETTINGS = ControllerSettings()
