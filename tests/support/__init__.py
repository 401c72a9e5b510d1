"""Shared test harness: builders of objects, an in-process replica, readers of the fake cluster."""
