// Wrapper module that builds the cosign CLI
// (github.com/sigstore/cosign/v2/cmd/cosign): the suites sign artifacts
// with it as a user does, offline with a key pair, and Flux's
// source-controller verifies what it made.
module github.com/capwright/capwright/tests/tools/cosign

go 1.26.7

require github.com/sigstore/cosign/v2 v2.6.5
