"""Quota and order through the real controller: borrowing, preemption, fair sharing, checks, lifecycle."""
