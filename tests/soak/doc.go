// Package soak runs Capwright for a long time on the local plane while
// things change and break at once, and checks named invariants all along:
// an Env is a plane (real kube-apiserver and etcd, real Flux controllers
// with kustomize-controller sharded in two, the registry, the stand-in for
// github.com, workload API servers) with Capwright's manager, the Cluster
// API core and kubeadm providers, and a fleet of Tenants; Run draws a
// Schedule of churn (upgrades, tag bumps, rollbacks, Tenants and Clusters
// coming and going, bad input, mirror runs) and chaos (SIGKILLs, restarts,
// outages, a wiped artifact storage) from a seed, plays it, and returns a
// Report that names every violation with the object, the fault and the
// time, and plots the run (report.svg).
//
// tests/cmd/soak is the long run (make soak); tests/e2e/soak is the
// smoke that make test runs, and the proof that an injected violation
// fails it. docs/reliability.md says what each invariant means.
package soak
