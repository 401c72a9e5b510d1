"""Admission on the fake API server: the webhook as kube-apiserver calls it, and what it lets through."""
