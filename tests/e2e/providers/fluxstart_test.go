package providers

import (
	"context"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/capwright/capwright/internal/clusterctl"
	"github.com/capwright/capwright/internal/render"
	"github.com/capwright/capwright/tests/plane"
)

// fluxStartedAtOnce checks the two things Capwright's Flux objects do so
// that Flux installs a provider sooner, on the install that began at
// since:
//
//   - the OCIRepository and Kustomization were created with Flux's
//     finalizer: source- and kustomize-controller never wrote them (they
//     write only their status), where they would otherwise patch the
//     finalizer in and requeue, 750 ms later, before any work;
//   - every CRD of the providers carries
//     kustomize.toolkit.fluxcd.io/substitute: disabled (none holds a
//     variable), so kustomize-controller skipped substituting them.
func fluxStartedAtOnce(t *testing.T, ctx context.Context, c client.Client, since time.Time, providers []installed) {
	t.Helper()
	writes, err := env.Writes(plane.AdminUser, since)
	if err != nil {
		t.Fatal(err)
	}
	ours := map[string]bool{}
	for _, p := range providers {
		ours[p.obj.GetNamespace()+"/"+render.ObjectName(p.obj.ProviderType(), p.obj.GetName())] = true
	}
	statusWrites := 0
	for _, w := range writes {
		if (w.Resource != "ocirepositories" && w.Resource != "kustomizations") || !ours[w.Namespace+"/"+w.Name] {
			continue
		}
		if w.Subresource == "status" {
			statusWrites++
			continue
		}
		t.Errorf("Flux wrote its own object during the install (%s); Capwright creates it with Flux's finalizer so Flux need not add it", w)
	}
	if statusWrites == 0 {
		t.Fatal("the audit log shows no status write of Flux to the providers' objects: the check cannot see Flux's writes")
	}

	for _, p := range providers {
		var crds apiextensionsv1.CustomResourceDefinitionList
		label := clusterctl.ProviderLabelValue(p.obj.ProviderType(), p.obj.GetName())
		if err := c.List(ctx, &crds, client.MatchingLabels{"cluster.x-k8s.io/provider": label}); err != nil {
			t.Fatal(err)
		}
		if len(crds.Items) == 0 {
			t.Errorf("no CRD labelled cluster.x-k8s.io/provider=%s", label)
		}
		for _, crd := range crds.Items {
			if crd.Annotations["kustomize.toolkit.fluxcd.io/substitute"] != "disabled" {
				t.Errorf("CRD %s was substituted by Flux (annotations %v); none of %s's CRDs holds a variable", crd.Name, crd.Annotations, label)
			}
		}
	}
}
