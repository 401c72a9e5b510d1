"""Kueue's scheduler performance scenario, replayed against any API server (see ``bench/kueue_baseline.py``).

The pure parts (scenario shape and manifests, timeline, figures) are separate from the I/O parts (the
execution actor, the watcher, the processes) so that the arithmetic that decides pass or fail can be tested
on hand-made timelines without running anything.
"""
