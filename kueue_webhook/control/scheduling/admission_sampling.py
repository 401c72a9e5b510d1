"""Admission fair sharing's clock: each ``usageSamplingInterval`` every LocalQueue of a ClusterQueue with
usage-based admission has its consumed resources moved on towards what it uses now, and its status shows
them (Kueue's LocalQueue controller requeues each LocalQueue after that interval). The arithmetic and the
order it gives are the core's (``kueue_webhook.core.admission_fairness``); this task only says when.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable, Iterable

from kueue_webhook.api.config_model import Configuration

log = logging.getLogger("kueue_webhook.admission_fair_sharing")

__all__ = ["AdmissionUsageSampler"]


class AdmissionUsageSampler:
    """Samples while the configuration has ``admissionFairSharing``; a new configuration restarts the
    interval."""

    def __init__(
        self,
        configuration: Callable[[], Configuration],
        sample: Callable[[], list[str]],
        show: Callable[[Iterable[str]], None],
    ) -> None:
        self._configuration = configuration
        #: the scheduler's sample: the LocalQueues ("namespace/name") it moved on
        self._sample = sample
        #: asks for those LocalQueues' status to be written
        self._show = show
        self._reconfigured = asyncio.Event()

    def reconfigure(self, _configuration: Configuration) -> None:
        self._reconfigured.set()

    async def run(self) -> None:
        """Until cancelled (with the leadership term)."""
        while True:
            config = self._configuration().admission_fair_sharing
            self._reconfigured.clear()
            if config is None:
                await self._reconfigured.wait()
                continue
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(
                    self._reconfigured.wait(), timeout=config.usage_sampling_interval_seconds
                )
                continue  # a new configuration: its interval, from now
            sampled = self._sample()
            if sampled:
                log.debug("admission fair sharing sampled", extra={"local_queues": len(sampled)})
                self._show(sampled)
