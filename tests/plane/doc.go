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
// Beside the plane, ReleaseServer (StartReleaseServer) stands in for
// GitHub release hosting, which cannot be reached here: it serves provider
// release assets in GitHub's URL layout over HTTPS, with GitHub's redirect
// from the origin to a second download host, and publishes the real
// provider releases `make fixtures` renders (PublishFixtures).
package plane
