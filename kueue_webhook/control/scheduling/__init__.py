"""The scheduling side: the loop over the pure core (and what follows a written eviction), the pending
conditions of waiting Workloads, pods-ready timers, the admission-checks controller, and the queue status
and fair-sharing reporters."""
