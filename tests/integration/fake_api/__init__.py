"""The fake API server itself, held to kube-apiserver v1.36.2: its contract, golden replays, kubectl."""
