// Package hcpsim stands in for a hosted-control-plane operator in the local
// test plane.
//
// Capwright's Cluster API ControlPlane kinds install a Helm chart through
// Flux's helm-controller, and the chart's objects are served by a hosted
// control plane backend (Kamaji, k0smotron, vcluster, a cloud). None of
// those can run here, so the plane runs hcpsim instead, the way certsim
// stands in for cert-manager. It is SIMULATED: it behaves like such an
// operator at the API (objects, status, Secrets), not inside.
//
// For each SimulatedControlPlane (hcpsim.plane.capwright.io/v1alpha1,
// CRDManifest) the operator:
//
//   - adds the finalizer hcpsim.plane.capwright.io/control-plane;
//   - starts a real etcd and kube-apiserver as local processes (through the
//     Backend the plane gives it: one of its workload clusters), writes the
//     admin kubeconfig into the Secret spec.kubeconfigSecretName under key
//     admin.conf (not Cluster API's "value"), owned by the object so the
//     garbage collector removes it, and reports status ready=true,
//     endpoint https://127.0.0.1:<port>, version, reason Ready;
//   - with spec.failure set, reports ready=false with the failure's reason
//     and message and starts nothing; a control plane that already runs
//     keeps running (as behind a real backend whose reconciliation fails),
//     and status still names its endpoint and version;
//   - on a spec.version change, reports ready=false reason Upgrading for
//     spec.upgradeDelay (default 2s), then ready=true at the new version.
//     The API server keeps serving throughout, as a rolling upgrade of a
//     replicated control plane would;
//   - on deletion, stops the processes and waits until they are gone,
//     deletes the kubeconfig Secret (without waiting for the garbage
//     collector), then removes its finalizer. When the operator stops (its
//     context ends) it stops every control plane it started.
//
// What it does not simulate: the version is a label only (every control
// plane runs the plane's own kube-apiserver build, whatever spec.version
// says, and its /version says so); there is no kube-controller-manager or
// scheduler (no pods run, no garbage collection or namespace finalization
// inside the hosted cluster), no nodes or workers, no high availability, no
// certificate rotation, no persistence across a restart of the operator
// (which the plane never does), no scaling, and nothing of any real
// backend's own API.
//
// Status is the normalized shape kany8s reads from hosted control plane
// backends: ready, endpoint, version (the version it runs, set once ready
// at it), reason, message and observedGeneration.
//
// ChartFiles is a Helm chart (hosted-control-plane 0.1.0) that creates one
// SimulatedControlPlane, for tests that install control planes through
// helm-controller.
package hcpsim
