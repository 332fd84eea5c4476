package contract

import (
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"

	clustersv1alpha1 "github.com/capwright/capwright/api/clusters/v1alpha1"
	"github.com/capwright/capwright/internal/clusterapi"
	"github.com/capwright/capwright/internal/plan"
	"github.com/capwright/capwright/internal/render"
)

// Cluster API's kubeconfig Secret (sigs.k8s.io/cluster-api util/secret).
const (
	// KubeconfigKey is the key of the kubeconfig in Cluster API's Secret,
	// and the default of spec.kubeconfig.key.
	KubeconfigKey        = "value"
	kubeconfigSecretType = clusterapi.SecretType
)

// KubeconfigGroup is the group of the published kubeconfig Secret in a
// sync.
const KubeconfigGroup = "kubeconfig"

// KubeconfigSource is the backend's kubeconfig Secret
// (spec.kubeconfig.secretName) as read: its data, or Missing.
type KubeconfigSource struct {
	Missing bool
	Data    map[string][]byte
}

// Kubeconfig is the copy of the backend's kubeconfig a control plane
// publishes as Cluster API's `<cluster>-kubeconfig` Secret, to sync; or,
// when it cannot be published (yet), why (the Secret's content never
// reaches a message). The sync refuses an existing Secret that is not
// the control plane's, or has another type (a Secret's type cannot
// change).
func Kubeconfig(cp *clustersv1alpha1.CapwrightControlPlane, d Desired, src KubeconfigSource) (plan.Desired, *KubeconfigSeen) {
	from := d.KubeconfigSecret
	if src.Missing {
		return plan.Desired{}, &KubeconfigSeen{Reason: clustersv1alpha1.KubeconfigSecretNotFoundReason,
			Message: fmt.Sprintf("Secret %s/%s (spec.kubeconfig.secretName) does not exist: the backend writes it; check that spec.kubeconfig names the Secret the backend creates", cp.Namespace, from)}
	}
	key := cp.Spec.Kubeconfig.Key
	if key == "" {
		key = KubeconfigKey
	}
	data := src.Data[key]
	if len(data) == 0 {
		keys := make([]string, 0, len(src.Data))
		for k := range src.Data {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		return plan.Desired{}, &KubeconfigSeen{Reason: clustersv1alpha1.KubeconfigKeyMissingReason,
			Message: fmt.Sprintf("Secret %s/%s has no key %q (spec.kubeconfig.key); its keys are [%s]", cp.Namespace, from, key, strings.Join(keys, " "))}
	}
	secret := &corev1.Secret{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"},
		ObjectMeta: metav1.ObjectMeta{
			Namespace: cp.Namespace, Name: clusterapi.KubeconfigSecretName(d.Cluster.Name),
			Labels: map[string]string{clusterapi.ClusterNameLabel: d.Cluster.Name},
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: clustersv1alpha1.GroupVersion.String(), Kind: clustersv1alpha1.ControlPlaneKind,
				Name: cp.Name, UID: cp.UID, Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true),
			}},
		},
		Type: kubeconfigSecretType,
		Data: map[string][]byte{KubeconfigKey: data},
	}
	uid := cp.UID
	return plan.Desired{
		Writes: []plan.Write{{Object: secret, Uncached: true, Group: KubeconfigGroup}},
		Owned: func(existing *unstructured.Unstructured, _ plan.Object) error {
			ref := existing.GetNamespace() + "/" + existing.GetName()
			if !render.ControlledBy(existing, uid) {
				return fmt.Errorf("Secret %s exists and is not this control plane's: Capwright changes nothing; delete it if nothing else writes it", ref) //nolint:staticcheck // ST1005: a condition message starts with the kind it names
			}
			if t, _, _ := unstructured.NestedString(existing.Object, "type"); corev1.SecretType(t) != kubeconfigSecretType {
				return fmt.Errorf("Secret %s has type %s, not %s: delete it and Capwright writes it again", ref, t, kubeconfigSecretType) //nolint:staticcheck // ST1005: a condition message starts with the kind it names
			}
			return nil
		},
	}, nil
}

// KubeconfigConflict is the outcome of a published kubeconfig Secret the
// sync refused.
func KubeconfigConflict(message string) *KubeconfigSeen {
	return &KubeconfigSeen{Reason: clustersv1alpha1.ObjectConflictReason, Message: message}
}
