package tenants

import (
	"context"
	"maps"
	"strings"
	"testing"
	"time"

	"github.com/fluxcd/pkg/apis/meta"
	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	tenancyv1alpha1 "github.com/capwright/capwright/api/tenancy/v1alpha1"
	"github.com/capwright/capwright/tests/e2e/framework"
)

// TestTenantStackVerification: a stack with spec.stack.kustomize.verify
// installs when its artifact carries a cosign signature of the key in the
// named Secret (Flux's source-controller verifies it); a new tag that is
// not signed, or signed with another key, fails the cluster's line with
// Flux's VerificationError, naming the OCIRepository and how to sign, and
// what was installed stays.
func TestTenantStackVerification(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	c := newClient(t, env.Config)
	remote := newClient(t, workloads[0].Config)
	const name = "initech"
	cluster := types.NamespacedName{Namespace: clusterNamespace, Name: workloads[0].Name}

	key, err := framework.NewCosignKey()
	if err != nil {
		t.Fatal(err)
	}
	signed, err := framework.PushFiles(ctx, env.Registry.Host, "tenants/initech", "v1.0.0", stackFiles, nil)
	if err != nil {
		t.Fatal(err)
	}
	repository := strings.TrimPrefix(signed.URL, "oci://")
	if err := framework.CosignSign(ctx, repository+"@"+signed.Digest, key); err != nil {
		t.Fatal(err)
	}
	otherKey, err := framework.NewCosignKey()
	if err != nil {
		t.Fatal(err)
	}
	// v2.0.0 is not signed, v3.0.0 is signed with a key the stack does
	// not trust.
	refused := map[string]*framework.CosignKey{"v2.0.0": nil, "v3.0.0": otherKey}
	for tag, signer := range refused {
		files := maps.Clone(stackFiles)
		files["configmap.yaml"] = []byte(strings.Replace(string(stackFiles["configmap.yaml"]), "greeting: hello", "greeting: "+tag, 1))
		pushed, err := framework.PushFiles(ctx, env.Registry.Host, "tenants/initech", tag, files, nil)
		if err != nil {
			t.Fatal(err)
		}
		if signer != nil {
			if err := framework.CosignSign(ctx, repository+"@"+pushed.Digest, signer); err != nil {
				t.Fatal(err)
			}
		}
	}

	keys := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: cluster.Namespace, Name: "initech-cosign"}, Data: map[string][]byte{"cosign.pub": key.PublicPEM}}
	if err := c.Create(ctx, keys); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Delete(context.Background(), keys) })

	tn := kustomizeTenant(name, signed, tenancyv1alpha1.ClusterSelector{Names: []string{cluster.Name}, Namespaces: []string{cluster.Namespace}})
	tn.Spec.Stack.Kustomize.Verify = &tenancyv1alpha1.OCIVerification{SecretRef: &meta.LocalObjectReference{Name: keys.Name}}
	createTenant(t, ctx, c, tn)
	waitTenant(t, ctx, c, name, 2*time.Minute, "Tenant Ready with its signed stack", func(tn *tenancyv1alpha1.Tenant) bool {
		return isReady(tn) && tn.Status.ReadyClusters == 1
	})
	greeting := func() string { return stackGreeting(t, ctx, remote, name, cluster.Name) }
	if got := greeting(); got != "hello" {
		t.Fatalf("greeting = %q, want hello", got)
	}

	for _, tag := range []string{"v2.0.0", "v3.0.0"} {
		updateTenant(t, ctx, c, name, func(tn *tenancyv1alpha1.Tenant) { tn.Spec.Stack.Kustomize.Tag = tag })
		tn = waitTenant(t, ctx, c, name, 2*time.Minute, tag+" refused on the cluster's line", func(tn *tenancyv1alpha1.Tenant) bool {
			line := clusterLine(tn, cluster.Name)
			return !isReady(tn) && line != nil && line.Reason == sourcev1.VerificationError
		})
		line := clusterLine(tn, cluster.Name)
		t.Logf("%s: cluster line: %s", tag, line.Message)
		if !strings.Contains(line.Message, "OCIRepository "+cluster.Namespace+"/") || !strings.Contains(line.Message, "cosign sign") {
			t.Errorf("cluster line %q does not name the OCIRepository and how to sign", line.Message)
		}
		if got := greeting(); got != "hello" {
			t.Errorf("greeting = %q after %s was refused, want the signed stack's hello", got, tag)
		}
		if line.AppliedRevision != "" && !strings.HasPrefix(line.AppliedRevision, signed.Tag) {
			t.Errorf("cluster line: appliedRevision %q, want the signed %s", line.AppliedRevision, signed.Tag)
		}
	}
}
