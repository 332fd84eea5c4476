// Wrapper module that builds the Flux v2.9.5 controllers the product targets.
module github.com/capwright/capwright/tests/tools/flux

go 1.26.0

require (
	github.com/fluxcd/helm-controller v1.6.4
	github.com/fluxcd/kustomize-controller v1.9.5
	github.com/fluxcd/source-controller v1.9.5
)

replace (
	// The controllers pin a pre-release go-digest that registers BLAKE3;
	// replace directives of dependencies are ignored, so repeat it here.
	github.com/opencontainers/go-digest => github.com/opencontainers/go-digest v1.0.1-0.20231025023718-d50d2fec9c98
	// kustomize-controller builds against these exact kustomize and yaml
	// versions (its own go.mod replaces them the same way).
	sigs.k8s.io/kustomize/api => sigs.k8s.io/kustomize/api v0.21.1
	sigs.k8s.io/kustomize/kyaml => sigs.k8s.io/kustomize/kyaml v0.21.1
	gopkg.in/yaml.v3 => gopkg.in/yaml.v3 v3.0.1
	// v0.18.2 and v0.18.3 are refused by the module proxy here; v0.18.1
	// differs only in go.mod.
	github.com/fluxcd/pkg/artifact => github.com/fluxcd/pkg/artifact v0.18.1
)
