// Wrapper module that builds the cluster-api-operator manager (package
// sigs.k8s.io/cluster-api-operator/cmd) for the install benchmark that
// compares it with Capwright. Built only on request (`capi-operator`).
module github.com/capwright/capwright/tests/tools/capioperator

go 1.26.6

require sigs.k8s.io/cluster-api-operator v0.29.0
