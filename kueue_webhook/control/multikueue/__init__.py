"""MultiKueue: a manager cluster keeps the queues and quota; admitted Workloads run in worker clusters."""
