"""kueue-webhook: a Kueue-compatible job-queueing controller and admission webhook."""

__version__ = "0.1.0"
