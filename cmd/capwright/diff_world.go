package main

import (
	"context"
	"fmt"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	ctrl "sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/capwright/capwright/internal/clusterapi"
	"github.com/capwright/capwright/internal/plan"
)

// tenantManagementLists are empty lists of the kinds of a Tenant's
// management namespace: its identity, quota and kept revisions.
func tenantManagementLists() []ctrl.ObjectList {
	return []ctrl.ObjectList{&corev1.ServiceAccountList{}, &rbacv1.RoleBindingList{}, &corev1.ResourceQuotaList{}, &appsv1.ControllerRevisionList{}}
}

func newClusterList() ctrl.ObjectList { return &clusterapi.ClusterList{} }

// listItems are the objects of a filled list.
func listItems(list ctrl.ObjectList) ([]ctrl.Object, error) {
	objs, err := apimeta.ExtractList(list)
	if err != nil {
		return nil, err
	}
	out := make([]ctrl.Object, 0, len(objs))
	for _, o := range objs {
		obj, ok := o.(ctrl.Object)
		if !ok {
			return nil, fmt.Errorf("%T is not an object", o)
		}
		out = append(out, obj)
	}
	return out, nil
}

// addSecretNames adds the kubeconfig Secrets of namespace, read as
// metadata only: their names are all a plan reads (whether a Cluster's
// kubeconfig exists); their data never reaches the CLI.
func addSecretNames(ctx context.Context, c ctrl.Client, namespace string, out *[]ctrl.Object) error {
	list := &metav1.PartialObjectMetadataList{}
	list.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("SecretList"))
	if err := c.List(ctx, list, ctrl.InNamespace(namespace)); err != nil {
		return err
	}
	for _, s := range list.Items {
		if strings.HasSuffix(s.Name, clusterapi.KubeconfigSecretName("")) {
			*out = append(*out, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: s.Namespace, Name: s.Name, UID: s.UID, Labels: s.Labels}})
		}
	}
	return nil
}

// setStatusFrom sets cr's status to live's.
func setStatusFrom(cr, live ctrl.Object) {
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

// toUnstructured is obj with its kind, by c's scheme.
func toUnstructured(c ctrl.Client, obj plan.Object) (*unstructured.Unstructured, error) {
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return nil, err
	}
	u := &unstructured.Unstructured{Object: m}
	gvks, _, err := c.Scheme().ObjectKinds(obj)
	if err != nil || len(gvks) == 0 {
		return nil, fmt.Errorf("the kind of %T: %v", obj, err)
	}
	u.SetGroupVersionKind(gvks[0])
	return u, nil
}
