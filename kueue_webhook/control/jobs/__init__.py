"""Queued objects and their Workloads. The reconciler routes store changes to keys and asks each kind's
queueing mode (``queueing``, chosen by ``modes``: ``own_objects``, ``pods``, ``pod_groups``, ``statefulsets``)
to reconcile one; the modes' pure plans (``job_plan``, ``plan_group``, ``plan_statefulset``) return one step,
which the one ``executor`` writes. Beside them: the match of a running object against its Workload
(``workload_match``) and the lookup of owners the store does not watch (``owner_lookup``)."""
