"""One replica wired together: the ``Controller``, ``kueue-webhook serve``, the live ConfigMap and the webhook
configurations the replica declares."""
