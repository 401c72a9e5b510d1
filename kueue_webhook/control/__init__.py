"""The controller: asyncio glue between the cluster and the pure scheduling core (``kueue_webhook.core``).

Sub-packages, lowest layer first; each imports only from those before it:

* ``kube`` — what we talk to and how: resource references, the JSON client, connection and credentials,
  retry delays, API health, the replica's identity and the Lease;
* ``cache`` — the in-memory mirror fed by list+watch, and the keyed work queue;
* ``output`` — what tasks write: preconditioned writes, Events, Kueue's metrics, condition semantics, queue
  status, and the context every leader-side task shares;
* ``jobs`` — job objects and their Workloads: the plan of steps, the reconciler that runs it, pod groups,
  StatefulSets, the running-object match and the owner lookup;
* ``scheduling`` — the scheduling loop over the core, the pending conditions of waiting Workloads, pods-ready
  timers, admission checks, the queue status and fair-sharing reporters;
* ``replica`` — one replica wired together: the controller, ``kueue-webhook serve``, the live ConfigMap and
  the webhook configurations it declares.
"""
