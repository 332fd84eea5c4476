// Package contract holds the reconcilers of Capwright's Cluster API
// contract kinds, CapwrightControlPlane and CapwrightCluster. Each object
// waits for the Cluster that owns it, renders its backend from that
// Cluster (an OCIRepository and a HelmRelease or Kustomization in its own
// namespace, owned by it), lets Flux install it, reads the backend's
// normalized status through CEL and folds both into the Cluster API
// v1beta2 contract fields and conditions. A control plane also copies the
// backend's kubeconfig to `<cluster>-kubeconfig`. Deleting the object
// uninstalls the backend through Flux and waits until it is gone.
package contract
