// Wrapper module that builds kwok, which simulates kubelets so Deployments
// roll out on the local plane without a container runtime.
module github.com/capwright/capwright/tests/tools/kwok

go 1.26.0

require sigs.k8s.io/kwok v0.8.0
