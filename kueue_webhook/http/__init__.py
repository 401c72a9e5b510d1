"""The HTTPS port: everything that reaches this process over the network, by who calls it.

* ``admission`` — kube-apiserver's AdmissionReview and ConversionReview calls (Kueue's webhook paths
  plus ``/mutate``, ``/validate`` and ``/convert``): pure rules behind a bounded transport; the answers are
  advisory and change no state, so they need no client certificate (kube-apiserver presents none).
* ``visibility`` — Kueue's visibility API (``visibility.kueue.x-k8s.io``), reached through kube-apiserver's
  aggregator.
* ``dashboard`` — the live dashboard page and its JSON (``dashboard_page``: the inline page and its
  Content-Security-Policy), under the visibility API's path and guarded as its reads are.
* ``auth`` — who may call the visibility reads, the dashboard and ``/metrics``: ``front_proxy`` (the
  aggregator's client certificate and requestheader headers), ``reviews`` (TokenReview and
  SubjectAccessReview, cached) and ``requestheader`` (the front proxy's settings, from
  ``kube-system/extension-apiserver-authentication``).
  The standalone server has no API client to ask, so its ``/metrics`` is open (it has no visibility API).
* ``app`` — one aiohttp application with those routes plus the probes (``/healthz``, ``/readyz``) and
  ``/metrics``; ``create_metrics_app``, ``/metrics`` alone for a plain-HTTP port without authentication.
* ``tls`` — the serving certificate, reloaded live; ``server`` serves the app over TLS and is the standalone
  ``python -m kueue_webhook.http.server`` entry point (the webhook alone, without a controller).
"""
