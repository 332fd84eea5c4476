package build

import (
	"context"
	"fmt"
	"slices"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/capwright/capwright/api/providers/v1alpha1"
	tenancyv1alpha1 "github.com/capwright/capwright/api/tenancy/v1alpha1"
	"github.com/capwright/capwright/internal/clusterapi"
	"github.com/capwright/capwright/internal/fluxobjects"
)

// LiveWorld is what a cluster says that Build would otherwise fill in, for
// `capwright diff`: each custom resource's identity and status (carried
// onto crs), the Clusters and the names of kubeconfig Secrets, the Flux
// objects of the custom resources' namespaces and those labelled for
// Tenants, and the revisions Tenants keep. A cluster that does not serve
// Capwright's kinds fails it with the API server's no-match error.
func LiveWorld(ctx context.Context, c client.Client, crs []client.Object) ([]client.Object, error) {
	var core v1alpha1.CoreProviderList
	if err := c.List(ctx, &core, client.Limit(1)); err != nil {
		return nil, err
	}
	namespaces := map[string]bool{}
	var tenants []string
	for _, cr := range crs {
		live := cr.DeepCopyObject().(client.Object)
		err := c.Get(ctx, client.ObjectKeyFromObject(cr), live)
		switch {
		case apierrors.IsNotFound(err):
		case err != nil:
			return nil, err
		default:
			carryLive(cr, live)
		}
		if t, ok := cr.(*tenancyv1alpha1.Tenant); ok {
			tenants = append(tenants, t.Name)
			namespaces[t.ManagementNamespace()] = true
			for _, ns := range t.Spec.Clusters.Namespaces {
				namespaces[ns] = true
			}
		} else {
			namespaces[cr.GetNamespace()] = true
		}
	}
	var out []client.Object
	add := func(list client.ObjectList, opts ...client.ListOption) error {
		if err := c.List(ctx, list, opts...); err != nil && !fluxobjects.NotServed(err) {
			return err
		}
		items, err := fluxobjects.Items(list)
		out = append(out, items...)
		return err
	}
	for ns := range namespaces {
		for _, k := range fluxobjects.Kinds() {
			if err := add(k.NewList(), client.InNamespace(ns)); err != nil {
				return nil, err
			}
		}
		if err := add(&clusterapi.ClusterList{}, client.InNamespace(ns)); err != nil {
			return nil, err
		}
		if err := addSecretNames(ctx, c, ns, &out); err != nil {
			return nil, err
		}
	}
	for _, t := range tenants {
		sel := client.MatchingLabels{tenancyv1alpha1.TenantLabel: t}
		lists := tenantManagementLists()
		for _, k := range fluxobjects.Kinds() {
			lists = append(lists, k.NewList())
		}
		for _, list := range lists {
			if err := add(list, sel); err != nil {
				return nil, err
			}
		}
	}
	return dedupe(out), nil
}

// tenantManagementLists are empty lists of the kinds of a Tenant's
// management namespace: its identity, quota and kept revisions.
func tenantManagementLists() []client.ObjectList {
	return []client.ObjectList{&corev1.ServiceAccountList{}, &rbacv1.RoleBindingList{}, &corev1.ResourceQuotaList{}, &appsv1.ControllerRevisionList{}}
}

// addSecretNames adds the kubeconfig Secrets of namespace, read as
// metadata only: their names are all a plan reads (whether a Cluster's
// kubeconfig exists); their data never reaches the CLI.
func addSecretNames(ctx context.Context, c client.Client, namespace string, out *[]client.Object) error {
	list := &metav1.PartialObjectMetadataList{}
	list.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("SecretList"))
	if err := c.List(ctx, list, client.InNamespace(namespace)); err != nil {
		return err
	}
	for _, s := range list.Items {
		if strings.HasSuffix(s.Name, clusterapi.KubeconfigSecretName("")) {
			*out = append(*out, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: s.Namespace, Name: s.Name, UID: s.UID, Labels: s.Labels}})
		}
	}
	return nil
}

// carryLive gives the custom resource of the files the live one's
// identity and status: what the manager's facts read.
func carryLive(cr, live client.Object) {
	cr.SetUID(live.GetUID())
	cr.SetCreationTimestamp(live.GetCreationTimestamp())
	cr.SetGeneration(live.GetGeneration())
	cr.SetResourceVersion(live.GetResourceVersion())
	setStatusFrom(cr, live)
}

// setStatusFrom sets cr's status to live's.
func setStatusFrom(cr, live client.Object) {
	from, err := runtime.DefaultUnstructuredConverter.ToUnstructured(live)
	if err != nil {
		return
	}
	to, err := runtime.DefaultUnstructuredConverter.ToUnstructured(cr)
	if err != nil {
		return
	}
	if status, ok := from["status"]; ok {
		to["status"] = status
	}
	gvk := cr.GetObjectKind().GroupVersionKind()
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(to, cr); err == nil {
		cr.GetObjectKind().SetGroupVersionKind(gvk)
	}
}

// dedupe drops repeated objects (listed by namespace and by label).
func dedupe(objs []client.Object) []client.Object {
	seen := map[string]bool{}
	return slices.DeleteFunc(objs, func(o client.Object) bool {
		key := fmt.Sprintf("%T %s/%s", o, o.GetNamespace(), o.GetName())
		if seen[key] {
			return true
		}
		seen[key] = true
		return false
	})
}
