# Two entry points: `make demo` (the seed scenario on the embedded simulator) and `make test`.
PYTHON ?= python3
#: the import package (its __version__ is the project's version)
PACKAGE := kueue_webhook
VENV := .venv
BIN := $(VENV)/bin
#: the package with the test tool chain (make test), or with only what the demo needs (make demo)
STAMP := $(VENV)/.installed
DEMO_STAMP := $(VENV)/.installed-demo
DEMO_PLOT := demo-usage.png

.PHONY: demo test lint typecheck unit e2e bench clean chart-files

$(BIN)/pip:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip

# Reinstalled when the version changes too, so the installed metadata agrees with $(PACKAGE).__version__.
$(STAMP): pyproject.toml $(PACKAGE)/__init__.py | $(BIN)/pip
	$(BIN)/pip install --quiet -e '.[test]'
	touch $(STAMP)

$(DEMO_STAMP): pyproject.toml $(PACKAGE)/__init__.py | $(BIN)/pip
	$(BIN)/pip install --quiet -e '.[plot]'
	touch $(DEMO_STAMP)

demo: $(DEMO_STAMP)
	$(BIN)/kueue-webhook simulate manifests/examples/seed.yaml --plot $(DEMO_PLOT)
	@echo "Usage over time: $(DEMO_PLOT)"

lint: $(STAMP)
	$(BIN)/ruff check $(PACKAGE) tests bench
	$(BIN)/ruff format --check $(PACKAGE) tests bench

typecheck: $(STAMP)
	$(BIN)/mypy --strict $(PACKAGE)

unit: $(STAMP)
	$(BIN)/pytest; rc=$$?; if [ $$rc -eq 5 ]; then echo "no tests collected"; exit 0; fi; exit $$rc

test: lint typecheck unit

# The e2e tests on a real API server: KUEUE_E2E_KUBECONFIG's, else the control plane of ../shared/kube, started
# here when it exists (state in $KUBE_DIR, default /tmp/kube-local), with two more beside it as MultiKueue
# workers (instances 11 and 12, state in $KUBE_DIR-worker1/2). Runs hold /tmp/kube.lock: one at a time.
KUBE_UP := ../shared/kube/up.sh
e2e: $(STAMP)
	@if [ -z "$$KUEUE_E2E_KUBECONFIG" ] && [ -x $(KUBE_UP) ]; then \
		dir=$${KUBE_DIR:-/tmp/kube-local}; \
		KUBE_DIR=$$dir $(KUBE_UP) || exit 1; \
		KUBE_INSTANCE=11 KUBE_DIR=$$dir-worker1 $(KUBE_UP) || exit 1; \
		KUBE_INSTANCE=12 KUBE_DIR=$$dir-worker2 $(KUBE_UP) || exit 1; \
		export KUEUE_E2E_KUBECONFIG=$$dir/kubeconfig; \
		export KUEUE_E2E_WORKER_KUBECONFIGS=$$dir-worker1/kubeconfig,$$dir-worker2/kubeconfig; \
	fi; \
	flock /tmp/kube.lock $(BIN)/pytest tests/e2e -rs; rc=$$?; \
	if [ $$rc -eq 5 ]; then echo "no e2e tests collected"; exit 0; fi; exit $$rc

bench: $(STAMP)
	$(BIN)/python -m bench.core

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache $(DEMO_PLOT)

# The Helm chart carries copies of the manifests it renders unchanged (CRDs, RBAC, webhook configurations,
# alert rules, dashboard); refresh them after editing manifests/ (tests/unit/deploy checks they match).
chart-files:
	cd charts/kueue-webhook/files && cp ../../../manifests/crds/*.yaml crds/ && rm crds/kustomization.yaml && \
		find . -type f | while read -r f; do cp "../../../manifests/$$f" "$$f"; done
