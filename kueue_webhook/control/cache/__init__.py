"""The controller's in-memory mirror of the cluster (list+watch into one store) and its keyed work queue."""
