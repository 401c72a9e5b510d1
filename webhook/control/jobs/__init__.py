"""Queued job objects and their Workloads: the pure plan of steps, the reconciler that runs it, pod groups,
StatefulSets, the match of a running object against its Workload, and the lookup of real owners."""
