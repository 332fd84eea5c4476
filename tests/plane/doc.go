// Package plane starts and stops a local Kubernetes management plane made of
// real components running as local processes.
//
// Three parts are simulated, only because their real counterparts cannot
// run here: kwok plays the kubelets of fake nodes (pods are reported
// Running, no container runs); certsim (package certsim) plays cert-manager
// for the Issuers, Certificates and CA injection of real provider
// manifests; and hcpsim (package hcpsim, started by Plane.StartHCPSim) plays
// a hosted-control-plane operator: each SimulatedControlPlane gets a real
// etcd and kube-apiserver as a workload cluster, whatever Kubernetes version
// it names.
//
// Flux's controllers run as local processes too, in one of two ways. By
// default the plane starts them itself, with the ExternalArtifact gate on.
// With Options.RunDeployments it starts none: Flux comes up as on a
// cluster, when `flux bootstrap git` (the real flux CLI, against the
// plane's Git server, GitServer) applies its Deployments, and the pod
// runner (pods.go) runs each of those Deployments' pods as a local process
// with the Deployment's own arguments and environment, as its
// ServiceAccount — so a feature gate reaches kustomize-controller only if
// the repository's flux-system kustomization.yaml sets it. The runner does
// the same for Capwright's manager installed by Flux from its release
// image, and for Cluster API's core manager installed by a CoreProvider.
// Only what a cluster's network provides is mapped: listen addresses to
// loopback ports, Service DNS names to the loopback address behind them.
//
// Beside the plane, ReleaseServer (StartReleaseServer) stands in for
// GitHub release hosting, which cannot be reached here: it serves provider
// release assets in GitHub's URL layout over HTTPS, with GitHub's redirect
// from the origin to a second download host, and publishes the real
// provider releases `make fixtures` renders (PublishFixtures).
package plane
