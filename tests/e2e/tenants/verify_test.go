package tenants

import (
	"context"
	"maps"
	"strings"
	"testing"
	"time"

	"github.com/fluxcd/pkg/apis/meta"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tenancyv1alpha1 "github.com/capwright/capwright/api/tenancy/v1alpha1"
	"github.com/capwright/capwright/tests/e2e/framework"
)

// TestTenantStackVerification: a stack with spec.stack.kustomize.verify
// installs when its artifact carries a cosign signature of the key in the
// named Secret (Flux's source-controller verifies it); a new tag that is
// not signed fails the cluster's line, naming the verification, and what
// was installed stays.
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
	files := maps.Clone(stackFiles)
	files["configmap.yaml"] = []byte(strings.Replace(string(stackFiles["configmap.yaml"]), "greeting: hello", "greeting: unsigned", 1))
	unsigned, err := framework.PushFiles(ctx, env.Registry.Host, "tenants/initech", "v2.0.0", files, nil)
	if err != nil {
		t.Fatal(err)
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

	current := &tenancyv1alpha1.Tenant{}
	if err := c.Get(ctx, client.ObjectKey{Name: name}, current); err != nil {
		t.Fatal(err)
	}
	current.Spec.Stack.Kustomize.Tag = unsigned.Tag
	if err := c.Update(ctx, current); err != nil {
		t.Fatal(err)
	}
	tn = waitTenant(t, ctx, c, name, 2*time.Minute, "the unsigned tag refused on the cluster's line", func(tn *tenancyv1alpha1.Tenant) bool {
		line := clusterLine(tn, cluster.Name)
		return !isReady(tn) && line != nil && strings.Contains(strings.ToLower(line.Message), "verif")
	})
	t.Logf("cluster line: %+v", *clusterLine(tn, cluster.Name))
	if got := greeting(); got != "hello" {
		t.Errorf("greeting = %q after the unsigned tag was refused, want the signed stack's hello", got)
	}
	if line := clusterLine(tn, cluster.Name); line.AppliedRevision != "" && !strings.HasPrefix(line.AppliedRevision, signed.Tag) {
		t.Errorf("cluster line: appliedRevision %q, want the signed %s", line.AppliedRevision, signed.Tag)
	}
}
