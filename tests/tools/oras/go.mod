// Wrapper module that builds the oras CLI (oras.land/oras/cmd/oras), a
// producer of OCI artifacts that is not Capwright: the providers suite
// pushes a provider artifact with it and installs that unmodified.
module github.com/capwright/capwright/tests/tools/oras

go 1.26.7

require oras.land/oras v1.3.6
