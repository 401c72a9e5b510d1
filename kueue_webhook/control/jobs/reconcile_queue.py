"""The job reconciler's work queue: the shared de-duplicating queue, plus a way for the task that has just
made an object ready to reconcile it itself, at once.

An admitted Workload's Job is started by its reconcile. Handing that reconcile to a worker costs a turn of
the event loop, and on a busy one (watch events, other writes' answers) the turn is where the time goes
between the admission's answer and the Job's start. So the admission write's own task reconciles the key
straight from the answer (``JobReconciler.start_admitted``). It must still never run beside a worker on the
same key, or the Job would be patched twice: ``claim`` takes a key exactly as a worker's ``get`` does, and
refuses one a worker is on (that worker's reconcile is followed by another, as for any key dirtied while
active).
"""

from __future__ import annotations

from kueue_webhook.control.cache.workqueue import WorkQueue
from kueue_webhook.control.jobs.queueing import ObjectKey

__all__ = ["ReconcileQueue"]


class ReconcileQueue(WorkQueue[ObjectKey]):
    def claim(self, key: ObjectKey) -> bool:
        """Take ``key`` for the caller, who must call ``done(key)`` when finished, as a worker does after
        ``get``. False, and nothing changes, when a worker is on it already; otherwise it stops waiting
        in the queue (its reconcile is the caller's now)."""
        if key in self._active:
            return False
        self._pending.pop(key, None)
        self._urgent.pop(key, None)
        self._active.add(key)
        self._idle.clear()
        return True
