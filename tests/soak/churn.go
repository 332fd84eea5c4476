package soak

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"time"

	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	providersv1alpha1 "github.com/capwright/capwright/api/providers/v1alpha1"
	tenancyv1alpha1 "github.com/capwright/capwright/api/tenancy/v1alpha1"
	"github.com/capwright/capwright/internal/render"
	"github.com/capwright/capwright/tests/e2e/framework"
)

// churn makes the step's change. What can be written at once is written
// now (before the chaos); what it should lead to is checked by the
// returned verify, once everything has converged. note says what the
// step did when it could not do what the schedule says.
func (r *runner) churn(ctx context.Context, st Step) (verify func(context.Context), note string) {
	c := r.e.Client
	f := r.f
	fail := func(object, format string, args ...any) {
		r.rec.violate(ChurnTakesEffect, object, format, args...)
	}
	var t *tenant
	if st.Tenant != "" && st.Churn != TenantAdd {
		if t = f.tenant(st.Tenant); t == nil {
			return nil, "skipped: Tenant " + st.Tenant + " does not exist"
		}
	}
	switch st.Churn {
	case NoChurn:
	case ProviderUpgrade:
		p := f.providers[st.Provider]
		if err := updateProvider(ctx, c, p.obj, func(s *providersv1alpha1.ProviderSpec) { s.Version = NewCAPIVersion }); err != nil {
			return nil, "upgrade not written: " + err.Error()
		}
		p.version = NewCAPIVersion
	case ProviderDowngrade:
		r.rec.check(ChurnTakesEffect, 1)
		if msg := r.downgrade(ctx, f.providers[st.Provider]); msg != "" {
			fail(providerName(f.providers[st.Provider].obj), "%s", msg)
		}
	case TagBump, BadRevision:
		broken := st.Churn == BadRevision
		if err := f.pushRevision(ctx, t, broken); err != nil {
			return nil, "no revision pushed: " + err.Error()
		}
		t.rolledBack = broken && t.rollout
		if err := setRevision(ctx, c, t); err != nil {
			return nil, "revision not set: " + err.Error()
		}
		if broken {
			return func(ctx context.Context) { r.checkRolledBack(ctx, t) }, ""
		}
	case ValuesChange:
		value := fmt.Sprintf("step-%d", st.Index+1)
		if err := updateTenant(ctx, c, t.name, func(tn *tenancyv1alpha1.Tenant) {
			if tn.Spec.Stack.Chart != nil {
				tn.Spec.Stack.Chart.Values = &apiextensionsv1.JSON{Raw: []byte(`{"tier":"` + value + `"}`)}
			} else {
				tn.Spec.Stack.Kustomize.Substitute = map[string]string{"GREETING": value}
			}
		}); err != nil {
			return nil, "values not changed: " + err.Error()
		}
		if t.rolledBack {
			// A new value of a revision that failed is a new revision of
			// the same broken stack: it fails and rolls back too, and
			// the value never reaches the clusters.
			return nil, "the tenant's last revision was rolled back: its new value is expected to roll back too"
		}
		key := "greeting"
		if t.chart {
			key = "tier"
		}
		return func(ctx context.Context) { r.checkStackValue(ctx, t, key, value) }, ""
	case TenantAdd:
		churn := len(r.e.Servers) - 1
		t = &tenant{name: st.Tenant, extra: true, clusters: map[string]*cluster{}}
		for j := range 2 {
			cl := &cluster{namespace: clusterNamespace(t.name), name: clusterName(j), server: churn, churn: true}
			t.clusters[cl.name] = cl
		}
		if err := f.addTenant(ctx, t); err != nil {
			return nil, "tenant not added: " + err.Error()
		}
		return func(ctx context.Context) { r.checkStackOn(ctx, t.name, churn, true) }, ""
	case TenantRemove:
		if err := f.removeTenant(ctx, t); err != nil {
			return nil, "tenant not removed: " + err.Error()
		}
		return func(ctx context.Context) { r.checkStackOn(ctx, t.name, len(r.e.Servers)-1, false) }, ""
	case ClusterAdd:
		churn := len(r.e.Servers) - 1
		cl := &cluster{namespace: clusterNamespace(t.name), name: st.Cluster, server: churn, churn: true}
		if t.rollout {
			cl.ring = waves[len(waves)-1]
		}
		if err := f.registerCluster(ctx, cl); err != nil {
			return nil, "cluster not added: " + err.Error()
		}
		f.mu.Lock()
		t.clusters[cl.name] = cl
		f.mu.Unlock()
		return func(ctx context.Context) { r.checkStackOn(ctx, t.name, churn, true) }, ""
	case ClusterRemove:
		f.mu.Lock()
		cl := t.clusters[st.Cluster]
		delete(t.clusters, st.Cluster)
		f.mu.Unlock()
		if cl == nil {
			return nil, "skipped: no cluster " + st.Cluster
		}
		if err := f.removeCluster(ctx, cl); err != nil {
			return nil, "cluster not removed: " + err.Error()
		}
		return func(ctx context.Context) {
			r.checkStackOn(ctx, t.name, cl.server, false)
			if err := f.removeKubeconfig(ctx, cl); err != nil {
				r.logf("deleting the kubeconfig Secret of %s/%s: %v", cl.namespace, cl.name, err)
			}
		}, ""
	case BadInput:
		r.rec.check(ChurnTakesEffect, 1)
		b := BadInputs[st.BadInput]
		if msg := b.try(ctx, c, r.e.Plane.Registry.Host); msg != "" {
			fail(b.Name, "%s", msg)
		}
	case Mirror:
		r.rec.check(ChurnTakesEffect, 1)
		if msg := r.mirror(ctx); msg != "" {
			fail("capwright mirror", "%s", msg)
		}
	}
	return nil, ""
}

// downgrade sets an upgraded provider's version back, checks that it is
// refused (Compatible=False DowngradeRefused) and that nothing changed
// (installed version, resolved artifact, its Kustomization's generation),
// and sets the version forward again. It returns what went wrong.
func (r *runner) downgrade(ctx context.Context, p *provider) string {
	c := r.e.Client
	obj := p.obj.DeepCopyObject().(providersv1alpha1.Provider)
	if err := getRetrying(ctx, c, obj.(client.Object)); err != nil {
		return err.Error()
	}
	installed, artifact := obj.GetStatus().InstalledVersion, obj.GetStatus().Artifact.DeepCopy()
	ks := &kustomizev1.Kustomization{}
	ksKey := client.ObjectKey{Namespace: obj.GetNamespace(), Name: render.ObjectName(obj.ProviderType(), obj.GetName())}
	_ = getRetrying(ctx, c, ks, ksKey)
	generation := ks.Generation
	defer func() {
		if err := updateProvider(ctx, c, p.obj, func(s *providersv1alpha1.ProviderSpec) { s.Version = p.version }); err != nil {
			r.logf("setting %s back to %s: %v", providerName(p.obj), p.version, err)
		}
	}()
	if err := updateProvider(ctx, c, p.obj, func(s *providersv1alpha1.ProviderSpec) { s.Version = OldCAPIVersion }); err != nil {
		return "the downgrade was not written: " + err.Error()
	}
	deadline := time.Now().Add(2 * time.Minute)
	var last string
	for {
		if err := c.Get(ctx, client.ObjectKeyFromObject(obj), obj.(client.Object)); err == nil {
			cond := apimeta.FindStatusCondition(obj.GetConditions(), providersv1alpha1.CompatibleCondition)
			last = conditionString(cond)
			if cond != nil && cond.ObservedGeneration == obj.GetGeneration() && cond.Status == metav1.ConditionFalse && cond.Reason == providersv1alpha1.DowngradeReason {
				break
			}
		}
		if time.Now().After(deadline) {
			return fmt.Sprintf("the downgrade from %s to %s was not refused within 2m: Compatible %s", p.version, OldCAPIVersion, last)
		}
		time.Sleep(time.Second)
	}
	time.Sleep(2 * time.Second) // anything it wrongly wrote would be by now
	_ = c.Get(ctx, client.ObjectKeyFromObject(obj), obj.(client.Object))
	_ = c.Get(ctx, ksKey, ks)
	st := obj.GetStatus()
	switch {
	case st.InstalledVersion != installed:
		return fmt.Sprintf("the refused downgrade changed status.installedVersion from %s to %s", installed, st.InstalledVersion)
	case artifact != nil && (st.Artifact == nil || st.Artifact.Digest != artifact.Digest):
		return fmt.Sprintf("the refused downgrade changed status.artifact from %+v to %+v", artifact, st.Artifact)
	case ks.Generation != generation:
		return fmt.Sprintf("the refused downgrade changed Kustomization %s (generation %d → %d)", ksKey, generation, ks.Generation)
	}
	return ""
}

// mirror runs `capwright mirror` of the chart tenant's chart (a chart
// that lists no images is copied alone, so the run needs nothing outside
// the plane) into another repository of the plane's registry, and checks
// the copy's digest.
func (r *runner) mirror(ctx context.Context) string {
	var t *tenant
	for _, name := range r.f.tenantNames() {
		if x := r.f.tenant(name); x != nil && x.chart {
			t = x
			break
		}
	}
	if t == nil {
		return "no chart tenant to mirror the chart of"
	}
	host := r.e.Plane.Registry.Host
	repo := strings.TrimPrefix(t.url, "oci://"+host+"/")
	source, err := manifestDigest(ctx, host, repo, t.tag)
	if err != nil {
		return "reading the source: " + err.Error()
	}
	cache, err := os.MkdirTemp("", "soak-mirror-cache-")
	if err != nil {
		return err.Error()
	}
	defer os.RemoveAll(cache)
	cmd := exec.CommandContext(ctx, r.e.CLI, "mirror", "--plain-http", "--to", host+"/soak-mirror", t.url+":"+t.tag)
	cmd.Env = append(os.Environ(), "XDG_CACHE_HOME="+cache)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return fmt.Sprintf("capwright mirror %s:%s: %v\n%s", t.url, t.tag, err, out.String())
	}
	copied, err := manifestDigest(ctx, host, "soak-mirror/"+repo, t.tag)
	if err != nil {
		return fmt.Sprintf("the mirror's copy of %s:%s: %v", repo, t.tag, err)
	}
	if copied != source {
		return fmt.Sprintf("the mirror's copy of %s:%s has digest %s, the source %s", repo, t.tag, copied, source)
	}
	return ""
}

// manifestDigest is the digest the registry at host (plain HTTP) serves
// repo:tag at.
func manifestDigest(ctx context.Context, host, repo, tag string) (string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodHead, "http://"+host+"/v2/"+repo+"/manifests/"+tag, nil)
	if err != nil {
		return "", err
	}
	req.Header.Set("Accept", "application/vnd.oci.image.manifest.v1+json, application/vnd.oci.image.index.v1+json, application/vnd.docker.distribution.manifest.v2+json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", err
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("%s", resp.Status)
	}
	return resp.Header.Get("Docker-Content-Digest"), nil
}

// checkRolledBack checks, once converged (the rollout rolled back), that
// the bad revision is recorded as failed.
func (r *runner) checkRolledBack(ctx context.Context, t *tenant) {
	r.rec.check(ChurnTakesEffect, 1)
	tn := &tenancyv1alpha1.Tenant{}
	if err := getRetrying(ctx, r.e.Client, tn, client.ObjectKey{Name: t.name}); err != nil {
		return
	}
	ro := tn.Status.Rollout
	if ro == nil || len(ro.Failed) == 0 || !strings.HasPrefix(ro.Failed[len(ro.Failed)-1].Artifact, t.tag+"@") {
		r.rec.violate(ChurnTakesEffect, "Tenant "+t.name, "the bad revision %s is not the last of status.rollout.failed: %s", t.tag, rolloutString(ro))
	}
}

// checkStackValue checks that the stack's object on each server the
// tenant has clusters on carries value under key.
func (r *runner) checkStackValue(ctx context.Context, t *tenant, key, value string) {
	servers := map[int]bool{}
	r.f.mu.Lock()
	for _, cl := range t.clusters {
		servers[cl.server] = true
	}
	r.f.mu.Unlock()
	// One minute for all of them.
	got := map[int]string{}
	poll(ctx, time.Minute, func() bool {
		done := true
		for s := range servers {
			if got[s] == value {
				continue
			}
			cm, err := r.stackObject(ctx, s, t.name)
			if err != nil {
				got[s] = err.Error()
			} else {
				got[s] = cm.Data[key]
			}
			done = done && got[s] == value
		}
		return done
	})
	for s := range servers {
		r.rec.check(ChurnTakesEffect, 1)
		if got[s] != value {
			r.rec.violate(ChurnTakesEffect, fmt.Sprintf("ConfigMap %s/soak-stack on %s", t.name, r.e.Servers[s].Name),
				"%s is %q a minute after convergence, want the changed value %q", key, got[s], value)
		}
	}
}

// checkStackOn checks that the tenant's stack is (or, after a removal,
// is no longer) on server s.
func (r *runner) checkStackOn(ctx context.Context, tenantName string, s int, want bool) {
	r.rec.check(ChurnTakesEffect, 1)
	var last string
	ok := poll(ctx, time.Minute, func() bool {
		_, err := r.stackObject(ctx, s, tenantName)
		switch {
		case err == nil:
			last = "present"
			return want
		case apierrors.IsNotFound(err):
			last = "absent"
			return !want
		}
		last = err.Error()
		return false
	})
	if !ok {
		what := "installed"
		if !want {
			what = "uninstalled"
		}
		r.rec.violate(ChurnTakesEffect, fmt.Sprintf("ConfigMap %s/soak-stack on %s", tenantName, r.e.Servers[s].Name), "not %s a minute after convergence (%s)", what, last)
	}
}

func (r *runner) stackObject(ctx context.Context, s int, tenantName string) (*corev1.ConfigMap, error) {
	c, err := r.serverClient(s)
	if err != nil {
		return nil, err
	}
	cm := &corev1.ConfigMap{}
	return cm, c.Get(ctx, client.ObjectKey{Namespace: tenantName, Name: "soak-stack"}, cm)
}

// poll calls ok every second until it says true or timeout passes.
func poll(ctx context.Context, timeout time.Duration, ok func() bool) bool {
	deadline := time.Now().Add(timeout)
	for {
		if ok() {
			return true
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return false
		}
		time.Sleep(time.Second)
	}
}

func providerName(p providersv1alpha1.Provider) string {
	return fmt.Sprintf("%s provider %s/%s", p.ProviderType(), p.GetNamespace(), p.GetName())
}

// removeKubeconfig deletes a removed cluster's kubeconfig Secret, which
// Flux needed to uninstall the stack; it is no longer the user's.
func (f *fleet) removeKubeconfig(ctx context.Context, c *cluster) error {
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: c.namespace, Name: c.name + "-kubeconfig"}}
	f.owned.forget(secret)
	if err := f.e.Client.Delete(ctx, secret); err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	return nil
}

func userDataConfigMap(ns string) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "soak-user-data"}}
}

// setRevision points the tenant's stack at its tag (or chart version).
func setRevision(ctx context.Context, c client.Client, t *tenant) error {
	return updateTenant(ctx, c, t.name, func(tn *tenancyv1alpha1.Tenant) {
		if tn.Spec.Stack.Chart != nil {
			tn.Spec.Stack.Chart.Version = t.tag
		} else {
			tn.Spec.Stack.Kustomize.Tag = t.tag
		}
	})
}

// updateTenant changes Tenant name, reading it again on a conflict and
// trying again while the API server is away.
func updateTenant(ctx context.Context, c client.Client, name string, change func(*tenancyv1alpha1.Tenant)) error {
	return whileAway(ctx, func() error {
		return retry.RetryOnConflict(retry.DefaultRetry, func() error {
			tn := &tenancyv1alpha1.Tenant{}
			if err := c.Get(ctx, client.ObjectKey{Name: name}, tn); err != nil {
				return err
			}
			change(tn)
			return c.Update(ctx, tn)
		})
	})
}

// updateProvider changes the provider's spec the same way.
func updateProvider(ctx context.Context, c client.Client, p providersv1alpha1.Provider, change func(*providersv1alpha1.ProviderSpec)) error {
	obj := p.DeepCopyObject().(providersv1alpha1.Provider)
	return whileAway(ctx, func() error {
		return retry.RetryOnConflict(retry.DefaultRetry, func() error {
			if err := c.Get(ctx, client.ObjectKeyFromObject(obj), obj.(client.Object)); err != nil {
				return err
			}
			change(obj.GetSpec())
			return c.Update(ctx, obj.(client.Object))
		})
	})
}

// requestReconcile asks Tenant name to reconcile now.
func requestReconcile(ctx context.Context, c client.Client, name string) error {
	tn := &tenancyv1alpha1.Tenant{}
	if err := c.Get(ctx, client.ObjectKey{Name: name}, tn); err != nil {
		return err
	}
	return framework.RequestReconcile(ctx, c, tn)
}

// getRetrying reads obj (at key, or its own key), trying again while the
// API server is away.
func getRetrying(ctx context.Context, c client.Client, obj client.Object, key ...client.ObjectKey) error {
	k := client.ObjectKeyFromObject(obj)
	if len(key) > 0 {
		k = key[0]
	}
	return whileAway(ctx, func() error { return c.Get(ctx, k, obj) })
}

// whileAway calls do until it succeeds or fails with an answer of the
// API server's, for up to two minutes: a restarting API server or etcd
// answers nothing for a while.
func whileAway(ctx context.Context, do func() error) error {
	deadline := time.Now().Add(2 * time.Minute)
	for {
		err := do()
		if err == nil || apierrors.IsNotFound(err) || apierrors.IsInvalid(err) || apierrors.IsForbidden(err) || apierrors.IsConflict(err) ||
			time.Now().After(deadline) || ctx.Err() != nil {
			return err
		}
		time.Sleep(time.Second)
	}
}
