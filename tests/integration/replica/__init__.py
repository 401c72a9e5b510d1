"""One replica as a process: who it is, restarts and lease failover, a stalled leader, the serve command."""
