"""What leader-side tasks write and record: preconditioned writes through to the store, Events, Kueue's
metrics, condition semantics, queue status, and the ``ControlContext`` that carries them."""
