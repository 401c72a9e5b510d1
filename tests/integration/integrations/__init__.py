"""Queued kinds beyond batch/v1 Job: built-in integrations, declared CRDs, pods, pod groups, StatefulSets."""
