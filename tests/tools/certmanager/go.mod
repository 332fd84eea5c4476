// Wrapper module that only fetches cert-manager's CRDs (deploy/crds). Its
// binaries live in cmd/* modules that the module proxy does not serve, so the
// plane simulates the controller part (tests/plane/certsim).
module github.com/capwright/capwright/tests/tools/certmanager

go 1.26.0

require github.com/cert-manager/cert-manager v1.21.2
