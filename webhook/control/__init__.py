"""The controller: asyncio glue between the cluster and the pure scheduling core.

Layers, lowest first (each imports only from those before it):

* ``kinds``, ``backoff``, ``kubeconfig``, ``kube`` — what we talk to and how: typed resource references, retry
  delays, credentials, and a JSON client (no generated models);
* ``store``, ``informer``, ``workqueue``, ``writers``, ``events``, ``metrics``, ``conditions`` — one
  in-memory mirror fed by list+watch, preconditioned writes written through to it, best-effort Events,
  Kueue's metrics, Kubernetes condition semantics;
* ``config``, ``leader`` — the live ConfigMap and the Lease;
* ``reconciler`` (Job ⇄ Workload), ``pending_reasons`` and ``pending_messages`` (Kueue's pending condition
  on waiting Workloads), ``loop`` (the scheduling task over ``webhook.core``), ``queue_status`` and
  ``status_reporter`` (queue status, metrics);
* ``controller`` wires one replica, ``main`` is ``kueue-webhook serve``.
"""
