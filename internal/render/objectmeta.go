package render

import (
	"fmt"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/capwright/capwright/api/providers/v1alpha1"
)

// objectMeta is the metadata every Flux object of a provider shares.
type objectMeta struct {
	name, namespace string
	kind            string // the provider's kind
	provider        v1alpha1.Provider
}

// newObjectMeta checks that the Flux objects can carry the provider's name
// and resolves the provider's kind.
func newObjectMeta(in Input) (objectMeta, error) {
	p := in.Provider
	kind, err := providerKind(p)
	if err != nil {
		return objectMeta{}, err
	}
	if in.Kind != "" && in.Kind != kind {
		return objectMeta{}, fmt.Errorf("render: Input.Kind is %s but the provider is a %s", in.Kind, kind)
	}
	name := ObjectName(p.ProviderType(), p.GetName())
	// kustomize-controller and helm-controller label every object they
	// apply with the name of their Kustomization or HelmRelease, and a
	// label value has at most 63 characters.
	if errs := validation.IsValidLabelValue(name); len(errs) > 0 {
		return objectMeta{}, fmt.Errorf("metadata.name: the Flux objects of %s %s/%s would be named %q, which Flux cannot use as a label value (%s); use a shorter provider name",
			kind, p.GetNamespace(), p.GetName(), name, strings.Join(errs, "; "))
	}
	return objectMeta{name: name, namespace: p.GetNamespace(), kind: kind, provider: p}, nil
}

// providerKind asks the api package's scheme for the provider's kind, the
// way the API server names it; typed objects read through a client often
// have an empty TypeMeta, so it cannot be read off the object.
func providerKind(p v1alpha1.Provider) (string, error) {
	scheme := runtime.NewScheme()
	if err := v1alpha1.AddToScheme(scheme); err != nil {
		return "", fmt.Errorf("render: registering the provider kinds: %w", err)
	}
	gvks, _, err := scheme.ObjectKinds(p)
	if err != nil || len(gvks) == 0 {
		return "", fmt.Errorf("render: %T is not a provider kind of %s: %v", p, v1alpha1.GroupVersion, err)
	}
	return gvks[0].Kind, nil
}

// build returns fresh metadata for one object: in the provider's
// namespace, labelled with the provider's kind and name (how the
// controller maps a Flux object event back to its provider), and
// controlled by the provider so that deleting it garbage-collects the Flux
// objects.
func (m objectMeta) build() metav1.ObjectMeta {
	controller, block := true, true
	return metav1.ObjectMeta{
		Name:      m.name,
		Namespace: m.namespace,
		Labels: map[string]string{
			v1alpha1.ProviderKindLabel: m.kind,
			v1alpha1.ProviderNameLabel: m.provider.GetName(),
		},
		OwnerReferences: []metav1.OwnerReference{{
			APIVersion:         v1alpha1.GroupVersion.String(),
			Kind:               m.kind,
			Name:               m.provider.GetName(),
			UID:                m.provider.GetUID(),
			Controller:         &controller,
			BlockOwnerDeletion: &block,
		}},
	}
}

// interval is how often Flux reconciles (and corrects drift).
func interval(spec *v1alpha1.ProviderSpec) metav1.Duration {
	if spec.Interval != nil && spec.Interval.Duration > 0 {
		return *spec.Interval
	}
	return metav1.Duration{Duration: DefaultInterval}
}

// timeout bounds one apply and its health checks (or one Helm action).
func timeout(spec *v1alpha1.ProviderSpec) *metav1.Duration {
	if spec.Timeout != nil && spec.Timeout.Duration > 0 {
		return &metav1.Duration{Duration: spec.Timeout.Duration}
	}
	return &metav1.Duration{Duration: DefaultTimeout}
}

// maxRetryInterval bounds how long Flux waits before it tries a failed
// apply again (a webhook not serving yet, an API briefly unavailable).
// Flux's own default is the interval, ten minutes unless spec.interval
// says otherwise: an install that hit a passing error would sit failed for
// that long.
const maxRetryInterval = time.Minute

// retryInterval is the Kustomization's retryInterval: the interval, at
// most maxRetryInterval.
func retryInterval(spec *v1alpha1.ProviderSpec) *metav1.Duration {
	return &metav1.Duration{Duration: min(interval(spec).Duration, maxRetryInterval)}
}
