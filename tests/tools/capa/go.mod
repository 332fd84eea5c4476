// Wrapper module that only fetches the source of the Cluster API Provider AWS
// (CAPA) release whose components are rendered as a test fixture (see
// capa.go in the builder). Nothing is built from it.
module github.com/capwright/capwright/tests/tools/capa

go 1.26.0

require sigs.k8s.io/cluster-api-provider-aws/v2 v2.13.0
