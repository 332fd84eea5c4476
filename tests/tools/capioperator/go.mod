// Wrapper module that builds the cluster-api-operator manager (package
// sigs.k8s.io/cluster-api-operator/cmd): the adoption suite takes over what
// it installed, and the install benchmark compares it with Capwright.
module github.com/capwright/capwright/tests/tools/capioperator

go 1.26.6

require sigs.k8s.io/cluster-api-operator v0.29.0
