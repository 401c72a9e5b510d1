"""Topology-aware scheduling (TAS): where in the node tree of a flavor a pod set fits.

Kept apart from flavor assignment because it answers a different question: quota says *how much* a
ClusterQueue may use of a flavor, TAS says *where* the pods would land among that flavor's nodes, grouped
by the levels of the flavor's Topology. :mod:`.capacity` keeps the free capacity of every node and domain
current one event at a time (nodes, bound pods, admitted TAS workloads); :mod:`.placement` runs Kueue's
placement algorithm against it for one pod set (what a pod set asks for is read by
:mod:`kueue_webhook.api.topology_request`).
"""
