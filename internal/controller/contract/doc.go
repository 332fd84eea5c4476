// Package contract holds the reconcilers of Capwright's Cluster API
// contract kinds, CapwrightControlPlane and CapwrightCluster. Each object
// waits for the Cluster that owns it, renders its backend from that
// Cluster (an OCIRepository and a HelmRelease or Kustomization in its own
// namespace, owned by it), lets Flux install it, reads the backend's
// normalized status through CEL and folds both into the Cluster API
// v1beta2 contract fields and conditions. A control plane also copies the
// backend's kubeconfig to `<cluster>-kubeconfig`. Deleting the object
// uninstalls the backend through Flux and waits until it is gone.
//
// A reconcile runs four stages, on the shell (internal/controller/shell):
//
//   - facts (facts.go): the owning Cluster (internal/clusterapi), the
//     status expressions parsed;
//   - plan (internal/plan/contract.Plan): the backend's Flux objects,
//     variables substituted and mirrors applied, or a refusal;
//   - sync (sync.go): the plan written (apply.Syncer), read back, the
//     status view read (view.go), the kubeconfig published and the
//     endpoint written;
//   - fold (internal/plan/contract.FoldControlPlane, FoldCluster): the
//     conditions and contract fields, once, at the end of every
//     reconcile; the shell writes the status.
package contract
