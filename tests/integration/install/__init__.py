"""The documented install paths and the seed walk-through, run as written against the fake API server."""
