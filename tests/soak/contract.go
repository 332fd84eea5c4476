package soak

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clustersv1alpha1 "github.com/capwright/capwright/api/clusters/v1alpha1"
	"github.com/capwright/capwright/internal/render"
	"github.com/capwright/capwright/tests/e2e/framework"
)

// The fleet's contract Clusters are Cluster API Clusters of Capwright's
// contract kinds, set up as tests/e2e/clusters sets them up: the control
// plane a CapwrightControlPlane whose backend is hcpsim's chart
// (helm-controller installs it; hcpsim, the plane's simulated
// hosted-control-plane operator, starts a real etcd and kube-apiserver
// for it), the infrastructure a CapwrightCluster whose backend is a
// kustomize artifact (kustomize-controller applies it) with a ConfigMap
// as its status object, read with CEL. No Tenant selects them: they are
// here for the contract kinds' own reconciliation under churn and chaos.
const (
	// ContractNamespace holds the contract Clusters, their contract
	// objects and their backends.
	ContractNamespace = "soak-contracts"
	// contractVersion is the control planes' spec.version.
	contractVersion = "v1.31.0"
	// contractValueKey is the key of the infrastructure's status object
	// that carries the backend's SOAK_VALUE substitution, which
	// values-change changes.
	contractValueKey = "value"
)

// networkManifest is the infrastructure backend: its status object,
// ready at once, carrying the substitution values-change changes.
var networkManifest = []byte(`apiVersion: v1
kind: ConfigMap
metadata:
  name: ${CLUSTER_NAME}-network
data:
  ready: "true"
  cluster: ${CLUSTER_NAME}
  ` + contractValueKey + `: "${SOAK_VALUE}"
`)

func contractName(i int) string { return fmt.Sprintf("k%02d", i) }

// createContracts runs hcpsim, pushes its chart and the infrastructure
// backend, and creates EnvOptions.Contracts contract Clusters, each with
// its CapwrightControlPlane and CapwrightCluster; all are the user's.
// The Clusters go through Cluster API's webhooks: its manager must run.
func (f *fleet) createContracts(ctx context.Context) error {
	n := f.e.opts.Contracts
	if n <= 0 {
		return nil
	}
	p := f.e.Plane
	chartURL, err := framework.StartHostedControlPlanes(ctx, p)
	if err != nil {
		return err
	}
	network, err := framework.PushFiles(ctx, p.Registry.Host, "soak/backends/network", "v1.0.0", map[string][]byte{"network.yaml": networkManifest}, nil)
	if err != nil {
		return err
	}
	if err := f.createNamespace(ctx, ContractNamespace); err != nil {
		return err
	}
	names := make([]string, n)
	for i := range names {
		names[i] = contractName(i)
	}
	err = framework.Parallel(ctx, n, 4, func(ctx context.Context, i int) error {
		name := names[i]
		cp := &clustersv1alpha1.CapwrightControlPlane{
			ObjectMeta: metav1.ObjectMeta{Namespace: ContractNamespace, Name: name},
			Spec: clustersv1alpha1.CapwrightControlPlaneSpec{Version: contractVersion,
				CapwrightControlPlaneResourceSpec: framework.HostedControlPlaneSpec(chartURL, nil)},
		}
		infra := &clustersv1alpha1.CapwrightCluster{
			ObjectMeta: metav1.ObjectMeta{Namespace: ContractNamespace, Name: name},
			Spec: clustersv1alpha1.CapwrightClusterSpec{CapwrightClusterResourceSpec: clustersv1alpha1.CapwrightClusterResourceSpec{
				Backend: &clustersv1alpha1.Backend{Kustomize: &clustersv1alpha1.KustomizeBackend{
					OCIRepositoryAccess: clustersv1alpha1.OCIRepositoryAccess{URL: network.URL, Insecure: true}, Tag: network.Tag,
					Substitute: map[string]string{"SOAK_VALUE": "initial"}}},
				StatusFrom: &clustersv1alpha1.StatusFrom{APIVersion: "v1", Kind: "ConfigMap", Name: "${CLUSTER_NAME}-network",
					Ready: `data.ready == "true"`, Message: `"network of " + data.cluster`},
			}},
		}
		for _, obj := range []client.Object{cp, infra, framework.ContractCluster(ContractNamespace, name, nil)} {
			if err := f.create(ctx, obj); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	f.mu.Lock()
	f.contracts = names
	f.mu.Unlock()
	return nil
}

// contractNames are the contract Clusters, sorted.
func (f *fleet) contractNames() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.contracts
}

// contractsUnconverged lists the contract Clusters that have not
// converged: a control plane not Ready for its generation, initialized
// and at its spec.version; an infrastructure not Ready for its
// generation and provisioned; a Cluster to which Cluster API has not
// carried both over (status.initialization).
func (f *fleet) contractsUnconverged(ctx context.Context) ([]string, error) {
	c := f.e.Client
	var pending []string
	for _, name := range f.contractNames() {
		key := client.ObjectKey{Namespace: ContractNamespace, Name: name}
		meta := metav1.ObjectMeta{Namespace: ContractNamespace, Name: name}
		cp := &clustersv1alpha1.CapwrightControlPlane{ObjectMeta: meta}
		infra := &clustersv1alpha1.CapwrightCluster{ObjectMeta: meta}
		cluster := framework.ContractCluster(ContractNamespace, name, nil)
		for _, obj := range []client.Object{cp, infra, cluster} {
			if err := c.Get(ctx, key, obj); err != nil {
				if !apierrors.IsNotFound(err) {
					return nil, err
				}
				// Missing: the user's object, whose loss user-objects-kept
				// reports; it cannot converge.
				pending = append(pending, describe(obj)+": missing")
			}
		}
		if cp.UID != "" {
			if msg := controlPlaneConverged(cp); msg != "" {
				pending = append(pending, msg)
			}
		}
		if infra.UID != "" {
			if msg := infrastructureConverged(infra); msg != "" {
				pending = append(pending, msg)
			}
		}
		if cluster.GetUID() != "" {
			if msg := contractClusterConverged(cluster); msg != "" {
				pending = append(pending, msg)
			}
		}
	}
	return pending, nil
}

func controlPlaneConverged(cp *clustersv1alpha1.CapwrightControlPlane) string {
	who := fmt.Sprintf("%s %s/%s", clustersv1alpha1.ControlPlaneKind, cp.Namespace, cp.Name)
	st := cp.Status
	if msg := readyForGeneration(st.ObservedGeneration, cp.Generation, st.Conditions); msg != "" {
		return who + ": " + msg
	}
	switch {
	case !ptr.Deref(st.Initialization.ControlPlaneInitialized, false):
		return who + ": not initialized"
	case st.Version != cp.Spec.Version:
		return fmt.Sprintf("%s: status.version %q, want %s", who, st.Version, cp.Spec.Version)
	}
	return ""
}

func infrastructureConverged(infra *clustersv1alpha1.CapwrightCluster) string {
	who := fmt.Sprintf("%s %s/%s", clustersv1alpha1.ClusterKind, infra.Namespace, infra.Name)
	st := infra.Status
	if msg := readyForGeneration(st.ObservedGeneration, infra.Generation, st.Conditions); msg != "" {
		return who + ": " + msg
	}
	if !ptr.Deref(st.Initialization.Provisioned, false) {
		return who + ": not provisioned"
	}
	return ""
}

// readyForGeneration says what keeps a contract object's status from
// being Ready for generation.
func readyForGeneration(observed, generation int64, conditions []metav1.Condition) string {
	ready := apimeta.FindStatusCondition(conditions, clustersv1alpha1.ReadyCondition)
	switch {
	case observed != generation:
		return fmt.Sprintf("status of generation %d, spec at %d", observed, generation)
	case ready == nil || ready.Status != metav1.ConditionTrue || ready.ObservedGeneration != generation:
		return "Ready " + conditionString(ready)
	}
	return ""
}

// contractClusterConverged says what Cluster API has not carried over
// from the contract objects to the Cluster.
func contractClusterConverged(u *unstructured.Unstructured) string {
	who := fmt.Sprintf("Cluster %s/%s", u.GetNamespace(), u.GetName())
	var missing []string
	for _, field := range []string{"infrastructureProvisioned", "controlPlaneInitialized"} {
		if v, _, _ := unstructured.NestedBool(u.Object, "status", "initialization", field); !v {
			missing = append(missing, "status.initialization."+field)
		}
	}
	if len(missing) > 0 {
		return who + ": " + strings.Join(missing, " and ") + " not true"
	}
	return ""
}

// churnContract is values-change's part on the contract Clusters: a new
// SOAK_VALUE for one infrastructure backend (the step's index picks
// which, so a replay picks the same), which Flux must apply to its
// status object. It returns the step's verify followed by that check.
func (r *runner) churnContract(ctx context.Context, st Step, verify func(context.Context)) func(context.Context) {
	names := r.f.contractNames()
	if st.Churn != ValuesChange || len(names) == 0 {
		return verify
	}
	name := names[st.Index%len(names)]
	value := fmt.Sprintf("step-%d", st.Index+1)
	infra := &clustersv1alpha1.CapwrightCluster{}
	err := whileAway(ctx, func() error {
		return retry.RetryOnConflict(retry.DefaultRetry, func() error {
			if err := r.e.Client.Get(ctx, client.ObjectKey{Namespace: ContractNamespace, Name: name}, infra); err != nil {
				return err
			}
			infra.Spec.Backend.Kustomize.Substitute = map[string]string{"SOAK_VALUE": value}
			return r.e.Client.Update(ctx, infra)
		})
	})
	if err != nil {
		r.logf("the value of CapwrightCluster %s/%s not changed: %v", ContractNamespace, name, err)
		return verify
	}
	return func(ctx context.Context) {
		if verify != nil {
			verify(ctx)
		}
		r.checkContractValue(ctx, name, value)
	}
}

// checkContractValue checks that the infrastructure backend's status
// object of contract Cluster name carries value.
func (r *runner) checkContractValue(ctx context.Context, name, value string) {
	r.rec.check(ChurnTakesEffect, 1)
	cm := &corev1.ConfigMap{}
	key := client.ObjectKey{Namespace: ContractNamespace, Name: name + "-network"}
	var got string
	if !poll(ctx, time.Minute, func() bool {
		if err := r.e.Client.Get(ctx, key, cm); err != nil {
			got = err.Error()
			return false
		}
		got = cm.Data[contractValueKey]
		return got == value
	}) {
		r.rec.violate(ChurnTakesEffect, "ConfigMap "+key.String(), "%s is %q a minute after convergence, want the changed value %q of CapwrightCluster %s's backend",
			contractValueKey, got, value, name)
	}
}

// checkContractObjects holds the contract objects' backends to
// no-duplicates: each contract object has one source and one
// HelmRelease (control plane) or Kustomization (infrastructure), under
// their expected names, and no Flux object carries the owner label of a
// contract object the fleet does not have.
func (r *runner) checkContractObjects(ctx context.Context) {
	// By owner label value, then kind: the names seen.
	seen := map[string]map[string][]string{}
	for _, gvk := range fluxKinds {
		list := &metav1.PartialObjectMetadataList{}
		list.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
		if err := r.e.Client.List(ctx, list, client.InNamespace(ContractNamespace), client.HasLabels{clustersv1alpha1.BackendLabel}); err != nil {
			return
		}
		for _, o := range list.Items {
			if o.DeletionTimestamp != nil {
				continue
			}
			owner := o.Labels[clustersv1alpha1.BackendLabel]
			if seen[owner] == nil {
				seen[owner] = map[string][]string{}
			}
			seen[owner][gvk.Kind] = append(seen[owner][gvk.Kind], o.Name)
		}
	}
	for _, name := range r.f.contractNames() {
		for _, kind := range []string{clustersv1alpha1.ControlPlaneKind, clustersv1alpha1.ClusterKind} {
			owner := render.OwnerLabelValue(kind, name)
			applier := "Kustomization"
			if kind == clustersv1alpha1.ControlPlaneKind {
				applier = "HelmRelease"
			}
			want := render.ContractObjectName(kind, name)
			got := seen[owner]
			delete(seen, owner)
			r.rec.check(NoDuplicates, 1)
			var wrong []string
			for _, k := range slices.Sorted(maps.Keys(got)) {
				if (k != "OCIRepository" && k != applier) || len(got[k]) != 1 || got[k][0] != want {
					wrong = append(wrong, fmt.Sprintf("%s %s", k, strings.Join(got[k], ", ")))
				}
			}
			if len(wrong) > 0 {
				r.rec.violate(NoDuplicates, fmt.Sprintf("%s %s/%s", kind, ContractNamespace, name), "backend objects other than one OCIRepository and one %s named %s: %s",
					applier, want, strings.Join(wrong, "; "))
			}
		}
	}
	for _, owner := range slices.Sorted(maps.Keys(seen)) {
		r.rec.violate(NoDuplicates, fmt.Sprintf("%s=%s in %s", clustersv1alpha1.BackendLabel, owner, ContractNamespace), "Flux objects of a contract object the fleet does not have: %v", seen[owner])
	}
}
