"""Admission rules as pure functions: an AdmissionReview request, the configuration and a cluster view in,
a verdict out. ``review`` owns the wire format, ``jobs`` the Job rules (Kueue's plus the label policy and
anti-bypass), ``kueue`` the rules for kueue.x-k8s.io objects, ``routes`` maps URL paths to rules, ``view``
defines what the rules may ask about the cluster. Nothing here does I/O; ``kueue_webhook.http`` does the
HTTP."""
