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
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
)

// Options configure the simulator.
type Options struct {
	// Interval between reconcile passes; default 250ms.
	Interval time.Duration
	// Logf receives one line per action (issued, injected, …); may be nil.
	// Key material is never logged.
	Logf func(format string, args ...any)
}

const (
	defaultInterval = 250 * time.Millisecond
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
	s := newSimulator(dyn, opts.Logf)
	s.listMeta = func(ctx context.Context, gvr schema.GroupVersionResource) ([]metav1.ObjectMeta, error) {
		list, err := md.Resource(gvr).List(ctx, metav1.ListOptions{})
		if err != nil {
			return nil, err
		}
		out := make([]metav1.ObjectMeta, len(list.Items))
		for i := range list.Items {
			out[i] = list.Items[i].ObjectMeta
		}
		return out, nil
	}
	s.apply = func(ctx context.Context, gvr schema.GroupVersionResource, obj *unstructured.Unstructured) (*unstructured.Unstructured, error) {
		return dyn.Resource(gvr).Apply(ctx, obj.GetName(), obj, metav1.ApplyOptions{FieldManager: fieldManager, Force: true})
	}

	interval := opts.Interval
	if interval <= 0 {
		interval = defaultInterval
	}
	ticker := time.NewTicker(interval)
	defer ticker.Stop()
	for {
		if err := s.pass(ctx); err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("certsim: %w", err)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-ticker.C:
		}
	}
}

// simulator holds what one certsim run keeps between passes. Its API access
// goes through client, except two narrow paths that are fields so tests can
// stand in for what the fake dynamic client cannot model.
type simulator struct {
	client dynamic.Interface
	// listMeta lists only the metadata of the CA injection targets: CRDs
	// carry megabytes of schema, too much to fetch several times a second.
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
	l, err := s.client.Resource(gvr).List(ctx, metav1.ListOptions{})
	if err != nil {
		s.listFailed(ctx, gvr, err)
		return nil
	}
	s.resolved(gvr.String())
	return l.Items
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
