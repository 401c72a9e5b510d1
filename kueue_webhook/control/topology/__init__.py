"""Topology-aware pods at the edge: the watch of Nodes and of the pods of topology-aware Workloads, the
ungater that places gated pods on their assigned domains, and the controller that reacts to failed nodes.
The decisions are pure (``kueue_webhook.api.topology_pods``, ``kueue_webhook.api.node_failures``)."""
