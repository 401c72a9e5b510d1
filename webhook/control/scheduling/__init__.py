"""The scheduling side: the loop over the pure core, pending reasons and messages, pods-ready, admission
checks, and the queue status and fair-sharing reporters."""
