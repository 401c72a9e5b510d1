"""What users read of their queues: the visibility API and the kubectl kueue plugin."""
