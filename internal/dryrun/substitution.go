package dryrun

import (
	"context"
	"errors"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// substitutionSource is the client Flux's post-build substitution reads
// spec.postBuild.substituteFrom through (pkg/kustomize takes a whole
// client.Client; it only ever Gets). It lets through a Get of a ConfigMap
// or Secret in the Kustomization's namespace, answers each from the first
// read (Flux reads them again for every object), records the values of
// the Secrets so they can be masked, and refuses everything else.
type substitutionSource struct {
	reader    client.Reader
	namespace string
	read      map[sourceKey]readResult
	// secrets are the values of the Secrets read, in the order read.
	secrets []string
}

// sourceKey names a ConfigMap or a Secret (they may share a name).
type sourceKey struct{ kind, name string }

// readResult is one Get's answer.
type readResult struct {
	obj client.Object
	err error
}

// errNotSubstitution is what every request but a substituteFrom read gets.
var errNotSubstitution = errors.New("the dry run's build reads only the ConfigMaps and Secrets a Kustomization substitutes from")

func newSubstitutionSource(reader client.Reader, namespace string) *substitutionSource {
	return &substitutionSource{reader: reader, namespace: namespace, read: map[sourceKey]readResult{}}
}

// secretValues are the values of the Secrets read so far.
func (s *substitutionSource) secretValues() []string { return s.secrets }

func (s *substitutionSource) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	var kind string
	switch obj.(type) {
	case *corev1.Secret:
		kind = "Secret"
	case *corev1.ConfigMap:
		kind = "ConfigMap"
	default:
		return errNotSubstitution
	}
	if key.Namespace != s.namespace {
		return fmt.Errorf("%s %s: %w, in the Kustomization's namespace %s", kind, key, errNotSubstitution, s.namespace)
	}
	cacheKey := sourceKey{kind: kind, name: key.Name}
	if r, ok := s.read[cacheKey]; ok {
		if r.err == nil {
			copyInto(r.obj, obj)
		}
		return r.err
	}
	err := s.reader.Get(ctx, key, obj, opts...)
	if err == nil {
		if secret, ok := obj.(*corev1.Secret); ok {
			for _, v := range secret.Data {
				// Flux substitutes the value without its line breaks.
				s.secrets = append(s.secrets, string(v), strings.ReplaceAll(string(v), "\n", ""))
			}
			for _, v := range secret.StringData {
				s.secrets = append(s.secrets, v, strings.ReplaceAll(v, "\n", ""))
			}
		}
	}
	s.read[cacheKey] = readResult{obj: obj.DeepCopyObject().(client.Object), err: err}
	return err
}

// copyInto copies a cached ConfigMap or Secret into obj, of the same type.
func copyInto(from, obj client.Object) {
	switch to := obj.(type) {
	case *corev1.Secret:
		from.(*corev1.Secret).DeepCopyInto(to)
	case *corev1.ConfigMap:
		from.(*corev1.ConfigMap).DeepCopyInto(to)
	}
}

// The rest of client.Client: refused.

func (s *substitutionSource) List(context.Context, client.ObjectList, ...client.ListOption) error {
	return errNotSubstitution
}

func (s *substitutionSource) Apply(context.Context, runtime.ApplyConfiguration, ...client.ApplyOption) error {
	return errNotSubstitution
}

func (s *substitutionSource) Create(context.Context, client.Object, ...client.CreateOption) error {
	return errNotSubstitution
}

func (s *substitutionSource) Delete(context.Context, client.Object, ...client.DeleteOption) error {
	return errNotSubstitution
}

func (s *substitutionSource) Update(context.Context, client.Object, ...client.UpdateOption) error {
	return errNotSubstitution
}

func (s *substitutionSource) Patch(context.Context, client.Object, client.Patch, ...client.PatchOption) error {
	return errNotSubstitution
}

func (s *substitutionSource) DeleteAllOf(context.Context, client.Object, ...client.DeleteAllOfOption) error {
	return errNotSubstitution
}

func (s *substitutionSource) Status() client.SubResourceWriter { return refusedSubResource{} }

func (s *substitutionSource) SubResource(string) client.SubResourceClient {
	return refusedSubResource{}
}

func (s *substitutionSource) Scheme() *runtime.Scheme { return clientgoscheme.Scheme }

func (s *substitutionSource) RESTMapper() meta.RESTMapper { return meta.MultiRESTMapper{} }

func (s *substitutionSource) GroupVersionKindFor(runtime.Object) (schema.GroupVersionKind, error) {
	return schema.GroupVersionKind{}, errNotSubstitution
}

func (s *substitutionSource) IsObjectNamespaced(runtime.Object) (bool, error) {
	return false, errNotSubstitution
}

// refusedSubResource refuses every subresource request.
type refusedSubResource struct{}

func (refusedSubResource) Get(context.Context, client.Object, client.Object, ...client.SubResourceGetOption) error {
	return errNotSubstitution
}

func (refusedSubResource) Create(context.Context, client.Object, client.Object, ...client.SubResourceCreateOption) error {
	return errNotSubstitution
}

func (refusedSubResource) Update(context.Context, client.Object, ...client.SubResourceUpdateOption) error {
	return errNotSubstitution
}

func (refusedSubResource) Patch(context.Context, client.Object, client.Patch, ...client.SubResourcePatchOption) error {
	return errNotSubstitution
}

func (refusedSubResource) Apply(context.Context, runtime.ApplyConfiguration, ...client.SubResourceApplyOption) error {
	return errNotSubstitution
}

var _ client.Client = (*substitutionSource)(nil)
