# Capwright. `make demo` runs the main job on the local management plane;
# `make test` runs every test. Tools are built from source into bin/.

SHELL := bash
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := help

BIN            := $(CURDIR)/bin
PLANE_STATE    := $(BIN)/plane
GO             ?= go
# Version stamped into the CLI (capwright --version).
VERSION        ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
# Pinned tools, run through go.
CONTROLLER_GEN := $(GO) run sigs.k8s.io/controller-tools/cmd/controller-gen@v0.19.0
GOLANGCI_LINT_VERSION := v2.15.0
GOLANGCI_LINT  := $(BIN)/golangci-lint-$(GOLANGCI_LINT_VERSION)
WORKLOAD_CLUSTERS ?= 0
# make plane-up MANAGEMENT_B=1 also starts a second, empty management
# cluster (bin/plane/management-b.kubeconfig) to bootstrap from fleet.git
# and move Clusters to (docs/gitops.md).
MANAGEMENT_B   ?= 0
# go test flags. Each e2e package starts its own plane; most of an e2e
# test's time is waiting for Flux and the plane's controllers, so three
# packages at a time share the 2 cores without slowing each other down
# (measured on 2 cores: the cores were 40% busy on average, and no
# package took longer than with two at a time).
TEST_TIMEOUT   ?= 60m
E2E_PARALLEL   ?= 3
# The e2e packages that take longest, longest first (go test starts
# packages in the order it is given them): with three at a time the long
# ones overlap instead of the last of them running on its own at the end.
# The plane's own tests (tests/plane, about 2 minutes of starting planes)
# run among them, after these, not before them with the unit tests.
E2E_FIRST      := providers soak gitops install faults clusters tenants upgrades
# Iterations of the tenant benchmark on the plane.
BENCH_TIME     ?= 3x
# Runs per system of the side-by-side install benchmark (each on a fresh plane).
BENCH_RUNS     ?= 3
# Runs of each measurement of the CLI benchmark (publish, inspect, mirror
# against sequential skopeo).
CLI_BENCH_RUNS ?= 7
# Size of the fleet benchmark: Tenants, and Clusters per Tenant (a quick
# run: make bench FLEET_TENANTS=50).
FLEET_TENANTS  ?= 1000
FLEET_CLUSTERS ?= 20
# Size of the fleet benchmark with Flux applying (fleet-bench -apply), and
# the kustomize-controller shard counts it runs, each on a fresh plane
# (about 10 minutes each at 50 × 20; a quick run:
# make bench FLEET_APPLY_TENANTS=5 FLEET_APPLY_CLUSTERS=4).
FLEET_APPLY_TENANTS  ?= 50
FLEET_APPLY_CLUSTERS ?= 20
FLEET_APPLY_SHARDS   ?= 1,2,4
# The soak (make soak, docs/reliability.md): how long its seeded churn and
# chaos play, its seed (empty: drawn from the time and printed, so that
# SOAK_SEED=N replays a run) and its fleet. make test runs a 3-minute smoke
# of it instead (tests/e2e/soak; SOAK_DURATION in the environment
# lengthens that too).
SOAK_DURATION  ?= 60m
SOAK_SEED      ?=
SOAK_TENANTS   ?= 50
SOAK_CLUSTERS  ?= 20
# Time per fuzz target: make fuzz gives each a long run. make test gives each a
# count (FUZZ_QUICK), not a duration: Go 1.26's fuzzer can fail a target with a
# bare "context deadline exceeded" when a -fuzztime duration runs out under load
# (golang/go#75804, fixed in Go 1.27); a count has no deadline to race.
FUZZ_TIME      ?= 10m
FUZZ_QUICK     ?= 5000x
# The fuzz targets, as package:Target.
FUZZ_TARGETS   := ./internal/artifact:FuzzUntar ./internal/clusterctl:FuzzParseVariables \
                  ./internal/clusterctl:FuzzParseMetadata ./internal/render:FuzzAdditionalManifests \
                  ./internal/mirror:FuzzParseImage

export CAPWRIGHT_BIN_DIR := $(BIN)

.PHONY: help
help: ## Show the targets.
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-12s %s\n", $$1, $$2}'

.PHONY: tools
tools: ## Build the pinned plane components (Kubernetes, etcd, kwok, Flux, CAPI, cluster-api-operator), test CLIs (clusterctl, flux, oras, cosign) and the SBOM generator (cyclonedx-gomod) into bin/.
	$(GO) -C tests/tools run . -bin $(BIN)

.PHONY: fixtures
fixtures: ## Render the real provider releases used as test fixtures (Cluster API v1.13/v1.14 with its Docker provider, CAPA v2.13, Cluster API's test runtime extension v1.14) into bin/fixtures.
	$(GO) -C tests/tools run . -bin $(BIN) capi capa capi-test-extension capd

$(BIN)/local-plane: FORCE
	$(GO) build -o $@ ./tests/cmd/local-plane

$(BIN)/capwright-manager: FORCE
	$(GO) build -o $@ ./cmd/manager

$(BIN)/capwright: FORCE
	$(GO) build -ldflags "-X main.version=$(VERSION)" -o $@ ./cmd/capwright

.PHONY: FORCE
FORCE:

.PHONY: build
build: $(BIN)/capwright ## Build every Go package of both modules, and the CLI into bin/capwright.
	$(GO) build ./...
	$(GO) -C api build ./...

.PHONY: generate
generate: ## Generate deep-copy code for the API types.
	cd api && $(CONTROLLER_GEN) object paths=./...

.PHONY: manifests
manifests: ## Generate CRDs and RBAC into manifests/, and copy clusterctl's inventory CRD of the pinned Cluster API.
	cd api && $(CONTROLLER_GEN) crd paths=./... output:crd:dir=$(CURDIR)/manifests/crd/bases
	$(CONTROLLER_GEN) rbac:roleName=capwright-manager paths=./internal/... output:rbac:dir=$(CURDIR)/manifests/rbac
	# list -m names no directory until the module is downloaded.
	GOFLAGS=-mod=mod $(GO) -C tests/tools/capi mod download sigs.k8s.io/cluster-api
	capi=$$(GOFLAGS=-mod=mod $(GO) -C tests/tools/capi list -m -f '{{.Dir}}' sigs.k8s.io/cluster-api) && \
	{ echo "# clusterctl's inventory CRD, copied by make manifests from sigs.k8s.io/cluster-api $$(basename $$capi | cut -d@ -f2)."; \
	  cat $$capi/cmd/clusterctl/config/manifest/clusterctl-api.yaml; } > manifests/clusterctl/clusterctl-api.yaml
	# The Helm chart carries the same CRDs and ClusterRole.
	cp manifests/crd/bases/providers.capwright.io_*.yaml manifests/crd/bases/tenancy.capwright.io_*.yaml manifests/crd/bases/clusters.capwright.io_*.yaml manifests/clusterctl/clusterctl-api.yaml charts/capwright/crds/
	# The chart names the manager's ClusterRole from the release.
	{ echo "# Copied from manifests/rbac/role.yaml by make manifests, named from the release."; \
	  awk '/^  name: capwright-manager$$/ { print "  name: {{ include \"capwright.managerName\" . }}"; print "  labels: {{- include \"capwright.labels\" . | nindent 4 }}"; next } { print }' manifests/rbac/role.yaml; } > charts/capwright/templates/clusterrole.yaml
	grep -q 'capwright.managerName' charts/capwright/templates/clusterrole.yaml || { echo "manifests/rbac/role.yaml: no ClusterRole capwright-manager to name from the release"; exit 1; }
	{ echo "# Copied from manifests/rbac/tenant_roles.yaml by make manifests. These keep their fixed"; \
	  echo "# names whatever the release is called: the manager binds capwright-tenant by name."; \
	  cat manifests/rbac/tenant_roles.yaml; } > charts/capwright/templates/tenant-clusterroles.yaml
	{ echo "# Copied from manifests/rbac/provider_installer.yaml by make manifests. These keep their"; \
	  echo "# fixed names whatever the release is called: the manager binds capwright-provider-installer by name."; \
	  cat manifests/rbac/provider_installer.yaml; } > charts/capwright/templates/provider-installer-clusterroles.yaml
	{ echo "# Copied from manifests/rbac/contract_roles.yaml by make manifests; the binding names the"; \
	  echo "# manager's ServiceAccount from the release."; \
	  sed -e 's|^  name: capwright-manager$$|  name: {{ include "capwright.managerName" . }}|' \
	    -e 's|^  namespace: capwright-system$$|  namespace: {{ .Release.Namespace }}|' \
	    manifests/rbac/contract_roles.yaml; } > charts/capwright/templates/contract-clusterroles.yaml
	{ echo "# Copied from manifests/rbac/release_copies.yaml by make manifests; named, and placed"; \
	  echo "# in the manager's namespace, from the release."; \
	  sed -e 's|^  name: capwright-manager$$|  name: {{ include "capwright.managerName" . }}|' \
	    -e 's|^  name: capwright-manager-release-copies$$|  name: {{ include "capwright.managerName" . }}-release-copies|' \
	    -e 's|^  namespace: capwright-system$$|  namespace: {{ .Release.Namespace }}|' \
	    manifests/rbac/release_copies.yaml; } > charts/capwright/templates/release-copies-role.yaml
	# The admission policies name the manager's ServiceAccount, and themselves, from the release.
	{ echo "# Copied from manifests/rbac/manager_admission.yaml by make manifests, named from the release."; \
	  sed -e 's|system:serviceaccount:capwright-system:capwright-manager|system:serviceaccount:{{ .Release.Namespace }}:{{ include "capwright.managerName" . }}|' \
	    -e 's|capwright-manager-tenant-namespaces|{{ include "capwright.managerName" . }}-tenant-namespaces|' \
	    -e 's|capwright-manager-flux-objects|{{ include "capwright.managerName" . }}-flux-objects|' \
	    -e 's|capwright-manager-provider-installers|{{ include "capwright.managerName" . }}-provider-installers|' \
	    -e 's|capwright-manager-kubeconfig-secrets|{{ include "capwright.managerName" . }}-kubeconfig-secrets|' \
	    manifests/rbac/manager_admission.yaml; } > charts/capwright/templates/manager-admission.yaml
	grep -q 'serviceaccount:{{ .Release.Namespace }}' charts/capwright/templates/manager-admission.yaml || { echo "manifests/rbac/manager_admission.yaml: no manager username to name from the release"; exit 1; }

.PHONY: docs
docs: ## Generate the reference pages in docs/reference from the CRDs, condition constants, metrics, CLI commands and manager flags.
	$(GO) run ./tests/cmd/reference-docs -root $(CURDIR)

.PHONY: lint
lint: $(GOLANGCI_LINT) ## go vet and golangci-lint on both modules.
	$(GO) vet ./...
	$(GO) -C api vet ./...
	$(GOLANGCI_LINT) run ./...
	cd api && $(GOLANGCI_LINT) run --config $(CURDIR)/.golangci.yml ./...

$(GOLANGCI_LINT):
	GOBIN=$(BIN)/.golangci $(GO) install github.com/golangci/golangci-lint/v2/cmd/golangci-lint@$(GOLANGCI_LINT_VERSION)
	mv $(BIN)/.golangci/golangci-lint $@

.PHONY: test
test: tools ## Run unit, integration and e2e tests (builds the tools first).
	$(GO) vet ./...
	$(GO) -C api vet ./...
	$(GO) test -count=1 -timeout $(TEST_TIMEOUT) $$($(GO) list ./... | grep -v -e '/tests/e2e' -e '/tests/plane$$')
	$(MAKE) --no-print-directory fuzz FUZZ_TIME=$(FUZZ_QUICK)
	$(GO) test -count=1 -timeout $(TEST_TIMEOUT) -p $(E2E_PARALLEL) -v $(E2E_PACKAGES) 2>&1 | grep -E --line-buffered -v '^=== (RUN|PAUSE|CONT)'

# Every e2e package, E2E_FIRST first, then the plane's tests.
E2E_PACKAGES = $(addprefix ./tests/e2e/,$(E2E_FIRST)) ./tests/plane $(filter-out $(addprefix ./tests/e2e/,$(E2E_FIRST)),$(shell $(GO) list -f '{{.Dir}}' ./tests/e2e/... | sed 's|^$(CURDIR)|.|'))

.PHONY: fuzz
fuzz: ## Fuzz every parser of untrusted input, FUZZ_TIME each (default 10m); findings land in testdata/fuzz.
	@for t in $(FUZZ_TARGETS); do \
	  echo "fuzz $${t#*:} ($${t%%:*}, $(FUZZ_TIME))"; \
	  $(GO) test -run '^$$' -fuzz "^$${t#*:}\$$" -fuzztime $(FUZZ_TIME) "$${t%%:*}" || exit 1; \
	done

.PHONY: bench
bench: tools $(BIN)/capwright ## Benchmarks: pure packages, the CLI (also as a process: publish, inspect, and mirror beside sequential skopeo where installed, over 10 ms of registry latency), a Tenant change on 20 clusters, a fleet of 1,000 Tenants × 20 Clusters on one manager, and of 50 × 20 with Flux applying it in 1, 2 and 4 kustomize-controller shards, the three CAPI providers installed by Capwright (from OCI and from release URLs), bare Flux (also with the contract's settings, and with Capwright's own objects) and cluster-api-operator side by side, and a provider upgrade pushed to Git through Capwright and through hand-written Flux Kustomizations.
	$(GO) test -run '^$$' -bench . -benchmem ./internal/...
	$(GO) test -run '^$$' -bench . -benchmem -benchtime 3x ./cmd/capwright/
	$(GO) run ./tests/cmd/cli-bench -runs $(CLI_BENCH_RUNS) -capwright $(BIN)/capwright
	$(GO) test -run '^$$' -bench . -benchtime $(BENCH_TIME) -timeout 60m ./tests/e2e/tenants/
	$(GO) run ./tests/cmd/install-bench -runs $(BENCH_RUNS)
	$(GO) run ./tests/cmd/gitops-bench -runs $(BENCH_RUNS)
	$(GO) run ./tests/cmd/fleet-bench -tenants $(FLEET_TENANTS) -clusters $(FLEET_CLUSTERS)
	$(GO) run ./tests/cmd/fleet-bench -rollout -tenants $(FLEET_TENANTS) -clusters $(FLEET_CLUSTERS)
	$(GO) run ./tests/cmd/fleet-bench -apply -shards $(FLEET_APPLY_SHARDS) -tenants $(FLEET_APPLY_TENANTS) -clusters $(FLEET_APPLY_CLUSTERS)

.PHONY: soak
soak: tools ## Soak Capwright on the local plane: SOAK_DURATION (default 60m) of seeded churn and chaos on SOAK_TENANTS × SOAK_CLUSTERS, checking the invariants of docs/reliability.md all along (SOAK_SEED=N replays a run); report.txt and report.svg in bin/runs/soak-*/, exit 1 on any violation.
	$(GO) run ./tests/cmd/soak -duration $(SOAK_DURATION) $(if $(SOAK_SEED),-seed $(SOAK_SEED)) -tenants $(SOAK_TENANTS) -clusters $(SOAK_CLUSTERS)

.PHONY: demo
demo: tools $(BIN)/local-plane $(BIN)/capwright-manager ## Capwright the GitOps way on the local plane: flux bootstrap git (the real flux CLI), commit the example repository (Capwright, the real CAPI providers, a Tenant with its stack on two workload clusters), upgrade a provider by a commit, print, stop.
	$(BIN)/local-plane demo

.PHONY: plane-up
plane-up: tools $(BIN)/local-plane $(BIN)/capwright-manager ## Start the local plane in the background (bin/plane/kubeconfig, bin/plane/registry); MANAGEMENT_B=1 adds a second, empty management cluster (bin/plane/management-b.kubeconfig).
	@mkdir -p $(PLANE_STATE)
	@if [ -f $(PLANE_STATE)/pid ] && kill -0 $$(cat $(PLANE_STATE)/pid) 2>/dev/null; then \
		echo "plane already running (pid $$(cat $(PLANE_STATE)/pid)); make plane-down first"; exit 1; fi
	@rm -f $(PLANE_STATE)/ready
	@nohup $(BIN)/local-plane up -state $(PLANE_STATE) -workload-clusters $(WORKLOAD_CLUSTERS) $(if $(filter 1 true yes,$(MANAGEMENT_B)),-management-b) > $(PLANE_STATE)/up.log 2>&1 & \
	pid=$$!; \
	for i in $$(seq 1 600); do \
		if [ -f $(PLANE_STATE)/ready ]; then cat $(PLANE_STATE)/up.log | sed -n '/The local management plane is up/,$$p'; exit 0; fi; \
		if ! kill -0 $$pid 2>/dev/null; then echo "plane failed to start:"; cat $(PLANE_STATE)/up.log; exit 1; fi; \
		sleep 0.5; \
	done; echo "plane not ready after 300s; see $(PLANE_STATE)/up.log"; kill $$pid; exit 1

.PHONY: plane-down
plane-down: $(BIN)/local-plane ## Stop the plane started by plane-up.
	$(BIN)/local-plane down -state $(PLANE_STATE)

.PHONY: clean
clean: ## Remove run logs and plane state (keeps built tools).
	rm -rf $(BIN)/runs $(BIN)/local-plane

.PHONY: clean-all
clean-all: ## Remove everything in bin/, built tools included.
	rm -rf $(BIN)

# Release artifacts, built without a container runtime by cmd/release (the
# way ko does): the manager image, the manifests Flux consumes, the Helm
# chart and the CLI. PLAIN_HTTP=1 talks plain HTTP to REGISTRY.
REGISTRY    ?=
OUTPUT      ?=
PLAIN_HTTP  ?=
ALLOW_DIRTY ?=
# Signing (docs/security.md): COSIGN_KEY=cosign.key signs with that key
# (its password from COSIGN_PASSWORD, as cosign reads it); COSIGN_KEYLESS=1
# signs with the hosted CI's OIDC identity instead. Neither: unsigned.
# BUILDER_ID and INVOCATION_ID name the builder and the run in the
# provenance (a CI workflow's and a CI run's URL).
COSIGN_KEY     ?=
COSIGN_KEYLESS ?=
BUILDER_ID     ?=
INVOCATION_ID  ?=
RELEASE_FLAGS = $(if $(filter 1 true yes,$(PLAIN_HTTP)),-plain-http) $(if $(filter 1 true yes,$(ALLOW_DIRTY)),-allow-dirty)
SIGN_FLAGS    = -cosign $(BIN)/cosign -sbom-generator $(BIN)/cyclonedx-gomod \
	$(if $(COSIGN_KEY),-cosign-key '$(COSIGN_KEY)') $(if $(filter 1 true yes,$(COSIGN_KEYLESS)),-keyless) \
	$(if $(BUILDER_ID),-builder-id '$(BUILDER_ID)') $(if $(INVOCATION_ID),-invocation-id '$(INVOCATION_ID)')

.PHONY: release-tools
release-tools: ## Build only what make release needs into bin/: cosign and cyclonedx-gomod.
	$(GO) -C tests/tools run . -bin $(BIN) cosign cyclonedx

.PHONY: image
image: ## Build the manager image (linux/amd64+arm64) into the OCI layout bin/image; REGISTRY=host/prefix [PLAIN_HTTP=1] pushes it.
	$(GO) run ./cmd/release -image -version '$(VERSION)' \
		$(if $(REGISTRY),-registry '$(REGISTRY)',-registry ghcr.io/capwright -output $(BIN)/image) $(RELEASE_FLAGS)

.PHONY: release
release: ## make release VERSION=vX.Y.Z REGISTRY=host/prefix [COSIGN_KEY=cosign.key | COSIGN_KEYLESS=1] [OUTPUT=dir] [PLAIN_HTTP=1] [ALLOW_DIRTY=1]: image, chart, manifests, CLI, SBOMs, provenance, signatures.
	@case "$(origin VERSION)" in "command line"|environment*) ;; \
		*) echo "make release needs the version to release: make release VERSION=v0.1.0 REGISTRY=host/prefix" >&2; exit 1;; esac
	@$(MAKE) --no-print-directory release-tools
	$(GO) run ./cmd/release -version '$(VERSION)' -registry '$(REGISTRY)' $(if $(OUTPUT),-output '$(OUTPUT)') $(RELEASE_FLAGS) $(SIGN_FLAGS)
