"""MultiKueue through the real controller: worker clusters connected from kubeconfigs, their conditions."""
