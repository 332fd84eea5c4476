package certsim

import (
	"context"
	"fmt"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

const (
	annotationInjectFrom       = "cert-manager.io/inject-ca-from"
	annotationInjectFromSecret = "cert-manager.io/inject-ca-from-secret"
)

// CA injection writes with server-side apply, field manager "certsim",
// Force, and an object holding nothing but the caBundle fields (plus each
// webhook's name, the key of the webhooks map-list, so SSA merges into the
// existing entries). Flux applies these objects server-side too and never sets
// caBundle (for CRDs it even strips a placeholder one), so certsim owns
// exactly the caBundle fields and Flux the rest: neither undoes the other's
// writes, and Flux sees no drift. An Update or a merge patch would instead
// have to send every webhook in full and could fight Flux over the list.
// (The fake dynamic client cannot server-side apply unstructured objects, so
// the tests substitute simulator.apply with a model of SSA's merge.)
//
// An object is fetched only when its metadata shows a new resourceVersion or
// its wanted bundle changed, and applied only when a bundle differs.

// injectAll injects CA bundles into every annotated target.
func (s *simulator) injectAll(ctx context.Context, src caSources) {
	seen := map[string]injectedState{}
	for _, gvr := range []schema.GroupVersionResource{gvrCRD, gvrValidating, gvrMutating, gvrAPIService} {
		metas, err := s.listMeta(ctx, gvr)
		if err != nil {
			s.listFailed(ctx, gvr, err)
			continue
		}
		s.resolved(gvr.String())
		for _, m := range metas {
			key := gvr.Resource + " " + m.Name
			want, err := s.wantedBundle(ctx, m.Annotations, src)
			if err != nil {
				s.problem(key, "%s: %v", key, err)
				continue
			}
			if want == "" {
				continue
			}
			if st, ok := s.injected[key]; ok && st == (injectedState{m.ResourceVersion, want}) {
				seen[key] = st
				continue
			}
			rv, err := s.inject(ctx, gvr, m.Name, want)
			if err != nil {
				if !apierrors.IsConflict(err) {
					s.problem(key, "%s: %v", key, err)
				}
				continue
			}
			s.resolved(key)
			seen[key] = injectedState{rv, want}
		}
	}
	s.injected = seen
}

// wantedBundle returns the base64 CA bundle the annotations ask for, "" when
// they ask for none, or an error when it is not available (yet).
func (s *simulator) wantedBundle(ctx context.Context, annotations map[string]string, src caSources) (string, error) {
	var secret string
	if ref, ok := annotations[annotationInjectFrom]; ok {
		if !strings.Contains(ref, "/") {
			return "", fmt.Errorf("annotation %s: %q is not namespace/name", annotationInjectFrom, ref)
		}
		if secret, ok = src.certSecrets[ref]; !ok {
			return "", fmt.Errorf("waiting for certificate %s", ref)
		}
	} else if ref, ok := annotations[annotationInjectFromSecret]; ok {
		if !strings.Contains(ref, "/") {
			return "", fmt.Errorf("annotation %s: %q is not namespace/name", annotationInjectFromSecret, ref)
		}
		secret = ref
	} else {
		return "", nil
	}
	ca, ok := src.secretCAs[secret]
	if !ok {
		ns, name, _ := strings.Cut(secret, "/")
		sec, err := s.client.Resource(gvrSecret).Namespace(ns).Get(ctx, name, metav1.GetOptions{})
		switch {
		case err == nil:
			ca, _, _ = unstructured.NestedString(sec.Object, "data", "ca.crt")
		case !apierrors.IsNotFound(err):
			return "", fmt.Errorf("getting secret %s: %w", secret, err)
		}
		src.secretCAs[secret] = ca
	}
	if ca == "" {
		return "", fmt.Errorf("waiting for ca.crt in secret %s", secret)
	}
	return ca, nil
}

// inject makes the named object carry bundle and returns its resourceVersion.
func (s *simulator) inject(ctx context.Context, gvr schema.GroupVersionResource, name, bundle string) (string, error) {
	obj, err := s.client.Resource(gvr).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return "", fmt.Errorf("getting: %w", err)
	}
	patch := bundlePatch(obj, bundle)
	if patch == nil {
		return obj.GetResourceVersion(), nil
	}
	out, err := s.apply(ctx, gvr, patch)
	if err != nil {
		return "", fmt.Errorf("applying caBundle: %w", err)
	}
	s.logf("%s %s: injected CA bundle", gvr.Resource, name)
	return out.GetResourceVersion(), nil
}

// bundlePatch returns the minimal apply object that sets every caBundle of
// obj to bundle, or nil when all already hold it (or obj has no place for
// one). It always names every caBundle: fields certsim applied before and
// leaves out would be removed by the API server.
func bundlePatch(obj *unstructured.Unstructured, bundle string) *unstructured.Unstructured {
	patch := &unstructured.Unstructured{Object: map[string]any{}}
	patch.SetAPIVersion(obj.GetAPIVersion())
	patch.SetKind(obj.GetKind())
	patch.SetName(obj.GetName())
	var path []string
	switch obj.GetKind() {
	case "CustomResourceDefinition":
		if strategy, _, _ := unstructured.NestedString(obj.Object, "spec", "conversion", "strategy"); strategy != "Webhook" {
			return nil
		}
		path = []string{"spec", "conversion", "webhook", "clientConfig", "caBundle"}
	case "APIService":
		path = []string{"spec", "caBundle"}
	case "ValidatingWebhookConfiguration", "MutatingWebhookConfiguration":
		hooks, _, _ := unstructured.NestedSlice(obj.Object, "webhooks")
		stale := false
		out := make([]any, 0, len(hooks))
		for _, h := range hooks {
			hook, _ := h.(map[string]any)
			current, _, _ := unstructured.NestedString(hook, "clientConfig", "caBundle")
			stale = stale || current != bundle
			out = append(out, map[string]any{"name": hook["name"], "clientConfig": map[string]any{"caBundle": bundle}})
		}
		if !stale {
			return nil
		}
		patch.Object["webhooks"] = out
		return patch
	default:
		return nil
	}
	if current, _, _ := unstructured.NestedString(obj.Object, path...); current == bundle {
		return nil
	}
	_ = unstructured.SetNestedField(patch.Object, bundle, path...)
	return patch
}
