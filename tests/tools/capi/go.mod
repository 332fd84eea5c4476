// Wrapper module that builds the Cluster API core manager (package
// sigs.k8s.io/cluster-api/core). cluster-api replaces its api module with
// ./api, which a dependency's replace cannot do, so pin the published one.
module github.com/capwright/capwright/tests/tools/capi

go 1.26.0

require sigs.k8s.io/cluster-api v1.14.2

replace sigs.k8s.io/cluster-api/api => sigs.k8s.io/cluster-api/api v1.14.2
