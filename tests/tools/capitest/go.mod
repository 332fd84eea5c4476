// Wrapper module that only fetches the source of Cluster API's test module,
// whose test runtime extension's config tree is rendered as a release
// fixture (see capitest.go in the builder). Nothing is built from it: the
// module's packages need versions the proxy here does not serve.
module github.com/capwright/capwright/tests/tools/capitest

go 1.26.0

require sigs.k8s.io/cluster-api/test v1.14.2
