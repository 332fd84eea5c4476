package certsim

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/metadata/metadatainformer"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
)

// Options configure the simulator.
type Options struct {
	// Resync is the longest time between two reconcile passes while no
	// watched object changes; default 2s. A pass runs as soon as one does.
	Resync time.Duration
	// Logf receives one line per action (issued, injected, …); may be nil.
	// Key material is never logged.
	Logf func(format string, args ...any)
}

const (
	defaultResync = 2 * time.Second
	// minGap spaces passes while changes arrive in bursts (Flux applying a
	// provider's objects), so that a burst shares a few passes.
	minGap = 100 * time.Millisecond
	// fieldManager names certsim in managedFields and is its user agent.
	fieldManager = "certsim"
)

var (
	gvrIssuer        = schema.GroupVersionResource{Group: "cert-manager.io", Version: "v1", Resource: "issuers"}
	gvrClusterIssuer = schema.GroupVersionResource{Group: "cert-manager.io", Version: "v1", Resource: "clusterissuers"}
	gvrCertificate   = schema.GroupVersionResource{Group: "cert-manager.io", Version: "v1", Resource: "certificates"}
	gvrSecret        = schema.GroupVersionResource{Version: "v1", Resource: "secrets"}
	gvrCRD           = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}
	gvrValidating    = schema.GroupVersionResource{Group: "admissionregistration.k8s.io", Version: "v1", Resource: "validatingwebhookconfigurations"}
	gvrMutating      = schema.GroupVersionResource{Group: "admissionregistration.k8s.io", Version: "v1", Resource: "mutatingwebhookconfigurations"}
	gvrAPIService    = schema.GroupVersionResource{Group: "apiregistration.k8s.io", Version: "v1", Resource: "apiservices"}
)

// Run reconciles until ctx ends. It returns nil on ctx cancellation, or an
// error only for unrecoverable setup problems (a bad rest.Config, or a
// kube-system/certsim-ca Secret that does not hold a usable CA). Everything
// else, an API server not up yet included, is logged and retried.
func Run(ctx context.Context, cfg *rest.Config, opts Options) error {
	if cfg == nil {
		return errors.New("certsim: nil rest.Config")
	}
	cfg = rest.CopyConfig(cfg)
	cfg.UserAgent = fieldManager
	if cfg.QPS == 0 && cfg.RateLimiter == nil {
		// client-go's default of 5 QPS would stretch one pass over seconds.
		cfg.QPS, cfg.Burst = 50, 100
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return fmt.Errorf("certsim: creating dynamic client: %w", err)
	}
	md, err := metadata.NewForConfig(cfg)
	if err != nil {
		return fmt.Errorf("certsim: creating metadata client: %w", err)
	}
	resync := opts.Resync
	if resync <= 0 {
		resync = defaultResync
	}
	s := newSimulator(dyn, opts.Logf)
	s.apply = func(ctx context.Context, gvr schema.GroupVersionResource, obj *unstructured.Unstructured) (*unstructured.Unstructured, error) {
		return dyn.Resource(gvr).Apply(ctx, obj.GetName(), obj, metav1.ApplyOptions{FieldManager: fieldManager, Force: true})
	}
	return watchAndReconcile(ctx, s, dyn, md, resync)
}

// watchAndReconcile runs s's passes on change, as cert-manager's
// controllers do: informers watch the kinds a pass reads (the issuers and
// Certificates whole; Secrets and the CA injection targets by their
// metadata only, as CRDs carry megabytes of schema), a pass reads its lists
// from their caches, and a change of any of them wakes it. Polling the API
// server several times a second instead would load it in a way no real
// management cluster is loaded, and the plane's benchmarks measure that
// load.
func watchAndReconcile(ctx context.Context, s *simulator, dyn dynamic.Interface, md metadata.Interface, resync time.Duration) error {
	wake := make(chan struct{}, 1)
	kick := func() {
		select {
		case wake <- struct{}{}:
		default:
		}
	}
	onChange := cache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { kick() },
		UpdateFunc: func(any, any) { kick() },
		DeleteFunc: func(any) { kick() },
	}
	objects := dynamicinformer.NewDynamicSharedInformerFactory(dyn, 0)
	metas := metadatainformer.NewSharedInformerFactory(md, 0)
	for _, gvr := range []schema.GroupVersionResource{gvrIssuer, gvrClusterIssuer, gvrCertificate} {
		if _, err := objects.ForResource(gvr).Informer().AddEventHandler(onChange); err != nil {
			return fmt.Errorf("certsim: watching %s: %w", gvr.Resource, err)
		}
	}
	for _, gvr := range []schema.GroupVersionResource{gvrSecret, gvrCRD, gvrValidating, gvrMutating, gvrAPIService} {
		if _, err := metas.ForResource(gvr).Informer().AddEventHandler(onChange); err != nil {
			return fmt.Errorf("certsim: watching %s: %w", gvr.Resource, err)
		}
	}
	objects.Start(ctx.Done())
	metas.Start(ctx.Done())
	defer objects.Shutdown()
	defer metas.Shutdown()
	// No waiting for the caches to fill: a pass over a partial cache does
	// less, never harm, and filling them wakes the next one.

	s.listObjects = func(_ context.Context, gvr schema.GroupVersionResource) ([]unstructured.Unstructured, error) {
		cached, err := objects.ForResource(gvr).Lister().List(labels.Everything())
		if err != nil {
			return nil, err
		}
		out := make([]unstructured.Unstructured, 0, len(cached))
		for _, o := range cached {
			if u, ok := o.(*unstructured.Unstructured); ok {
				out = append(out, *u.DeepCopy()) // a pass edits what it lists
			}
		}
		return out, nil
	}
	s.listMeta = func(_ context.Context, gvr schema.GroupVersionResource) ([]metav1.ObjectMeta, error) {
		cached, err := metas.ForResource(gvr).Lister().List(labels.Everything())
		if err != nil {
			return nil, err
		}
		out := make([]metav1.ObjectMeta, 0, len(cached))
		for _, o := range cached {
			if m, ok := o.(*metav1.PartialObjectMetadata); ok {
				out = append(out, *m.ObjectMeta.DeepCopy())
			}
		}
		return out, nil
	}

	ticker := time.NewTicker(resync)
	defer ticker.Stop()
	for {
		started := time.Now()
		if err := s.pass(ctx); err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("certsim: %w", err)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-wake:
		case <-ticker.C:
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(time.Until(started.Add(minGap))):
		}
	}
}

// simulator holds what one certsim run keeps between passes. Its API access
// goes through client, except two narrow paths that are fields so tests can
// stand in for what the fake dynamic client cannot model.
type simulator struct {
	client dynamic.Interface
	// listObjects lists issuers and Certificates; nil lists them with
	// client (the tests).
	listObjects func(ctx context.Context, gvr schema.GroupVersionResource) ([]unstructured.Unstructured, error)
	// listMeta lists only the metadata of the CA injection targets: CRDs
	// carry megabytes of schema.
	listMeta func(ctx context.Context, gvr schema.GroupVersionResource) ([]metav1.ObjectMeta, error)
	// apply server-side applies a minimal caBundle object; see bundlePatch.
	apply func(ctx context.Context, gvr schema.GroupVersionResource, obj *unstructured.Unstructured) (*unstructured.Unstructured, error)
	logf  func(format string, args ...any)
	now   func() time.Time

	ca *authority
	// injected remembers, per injection target, the resourceVersion at which
	// it last carried the bundle it should, so an unchanged object is not
	// fetched again.
	injected map[string]injectedState
	// problems holds the last problem logged per object, so that a lasting
	// problem is logged once rather than on every pass.
	problems map[string]string
}

type injectedState struct {
	resourceVersion string
	bundle          string
}

func newSimulator(client dynamic.Interface, logf func(string, ...any)) *simulator {
	if logf == nil {
		logf = func(string, ...any) {}
	}
	return &simulator{
		client:   client,
		logf:     logf,
		now:      time.Now,
		injected: map[string]injectedState{},
		problems: map[string]string{},
	}
}

// pass reconciles everything once. Its only error is errCorruptCA; problems
// with single objects are logged and retried on the next pass.
func (s *simulator) pass(ctx context.Context) error {
	if s.ca == nil {
		ca, err := loadOrCreateCA(ctx, s.client, s.now())
		if errors.Is(err, errCorruptCA) {
			return err
		}
		if err != nil {
			s.problem("ca", "setting up CA: %v", err)
			return nil
		}
		s.resolved("ca")
		s.ca = ca
		s.logf("using the CA in secret %s/%s", caSecretNamespace, caSecretName)
	}
	s.reconcileIssuers(ctx, gvrIssuer, "issuer")
	s.reconcileIssuers(ctx, gvrClusterIssuer, "clusterissuer")
	s.injectAll(ctx, s.reconcileCertificates(ctx))
	return nil
}

// list lists gvr, or returns nothing when it cannot, which includes a kind
// whose CRD is not installed (yet).
func (s *simulator) list(ctx context.Context, gvr schema.GroupVersionResource) []unstructured.Unstructured {
	var items []unstructured.Unstructured
	var err error
	if s.listObjects != nil {
		items, err = s.listObjects(ctx, gvr)
	} else {
		var l *unstructured.UnstructuredList
		if l, err = s.client.Resource(gvr).List(ctx, metav1.ListOptions{}); err == nil {
			items = l.Items
		}
	}
	if err != nil {
		s.listFailed(ctx, gvr, err)
		return nil
	}
	s.resolved(gvr.String())
	return items
}

func (s *simulator) listFailed(ctx context.Context, gvr schema.GroupVersionResource, err error) {
	if ctx.Err() == nil && !apierrors.IsNotFound(err) && !meta.IsNoMatchError(err) {
		s.problem(gvr.String(), "listing %s: %v", gvr.Resource, err)
	}
}

func (s *simulator) problem(key, format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	if s.problems[key] != msg {
		s.problems[key] = msg
		s.logf("%s", msg)
	}
}

func (s *simulator) resolved(key string) { delete(s.problems, key) }

func objectKey(kind string, obj metav1.Object) string {
	if obj.GetNamespace() == "" {
		return kind + " " + obj.GetName()
	}
	return kind + " " + obj.GetNamespace() + "/" + obj.GetName()
}

func (s *simulator) reconcileIssuers(ctx context.Context, gvr schema.GroupVersionResource, kind string) {
	items := s.list(ctx, gvr)
	for i := range items {
		iss := &items[i]
		key := objectKey(kind, iss)
		if !setReady(iss, "IsReady", "Signing CA verified (simulated by certsim)", s.now()) {
			s.resolved(key)
			continue
		}
		_, err := s.client.Resource(gvr).Namespace(iss.GetNamespace()).UpdateStatus(ctx, iss, metav1.UpdateOptions{FieldManager: fieldManager})
		if err != nil {
			if !apierrors.IsConflict(err) {
				s.problem(key, "%s: setting Ready: %v", key, err)
			}
			continue
		}
		s.resolved(key)
		s.logf("%s: Ready", key)
	}
}

// setReady makes obj's status.conditions a single Ready=True condition with
// reason and message, and reports whether that changed anything. The
// lastTransitionTime of a condition that was already Ready=True is kept.
func setReady(obj *unstructured.Unstructured, reason, message string, now time.Time) bool {
	transition := now.UTC().Format(time.RFC3339)
	conds, _, _ := unstructured.NestedSlice(obj.Object, "status", "conditions")
	for _, c := range conds {
		m, _ := c.(map[string]any)
		if t, ok := m["lastTransitionTime"].(string); ok && t != "" && m["type"] == "Ready" && m["status"] == "True" {
			transition = t
		}
	}
	want := []any{map[string]any{
		"type":               "Ready",
		"status":             "True",
		"reason":             reason,
		"message":            message,
		"observedGeneration": obj.GetGeneration(),
		"lastTransitionTime": transition,
	}}
	if reflect.DeepEqual(conds, want) {
		return false
	}
	_ = unstructured.SetNestedSlice(obj.Object, want, "status", "conditions")
	return true
}
