package dryrun

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	"golang.org/x/sync/errgroup"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset/typed/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"

	"github.com/capwright/capwright/internal/plan"
)

// The manager asks as DryRunUser and may impersonate no one else; the
// admission policy capwright-provider-dry-run refuses that user every
// write that is not a dry run, so the impersonation adds no write power.
// +kubebuilder:rbac:groups="",resources=users,verbs=impersonate,resourceNames="capwright:provider-dry-run"

// DryRunUser is who a Runner asks as: a user nobody logs in as, bound to
// the role Flux installs providers with (ClusterRoleBinding
// capwright-provider-dry-run, manifests/rbac/provider_installer.yaml) and
// allowed dry runs only (ValidatingAdmissionPolicy
// capwright-provider-dry-run, manifests/rbac/manager_admission.yaml).
const DryRunUser = "capwright:provider-dry-run"

// FluxFieldManager is the field manager kustomize-controller applies
// with (its controller name). A dry run applies as it, so that the API
// server merges the new objects into the live ones as it will merge
// Flux's apply: the fields of the installed version that the new one
// drops go, instead of staying beside the new ones under Flux's name (a
// container port renumbered under the same name would otherwise read
// as a duplicate name, and be refused).
const FluxFieldManager = "kustomize-controller"

// concurrency is how many requests a Runner has in flight, across all
// its Runs (slots).
const concurrency = 8

// Runner dry-runs built objects against the API server.
type Runner struct {
	// objects applies and reads objects as metadata only: a dry run
	// needs the API server's verdict, not the object it would store.
	objects metadata.Interface
	// crds reads the installed CRDs (in protobuf: they are large).
	crds apiextensionsclient.CustomResourceDefinitionInterface
	// mapper tells each kind's resource and scope, and which kinds the
	// cluster does not serve yet.
	mapper meta.RESTMapper
	// slots bound the requests in flight across Runs: one token each.
	slots chan struct{}
}

// NewRunner is a Runner that impersonates DryRunUser on a copy of cfg.
// mapper is the manager's (discovery needs no impersonation).
func NewRunner(cfg *rest.Config, mapper meta.RESTMapper) (*Runner, error) {
	cfg = rest.CopyConfig(cfg)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: DryRunUser}
	// No client-side rate limit: a Runner has at most concurrency requests
	// in flight, which bounds its load (and the API server's priority and
	// fairness queues it); a token bucket would only make an upgrade wait,
	// and the manager's own budget is not spent on it.
	cfg.RateLimiter, cfg.QPS = nil, -1
	httpClient, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return nil, fmt.Errorf("dry-run client: %w", err)
	}
	objects, err := metadata.NewForConfigAndClient(cfg, httpClient)
	if err != nil {
		return nil, fmt.Errorf("dry-run client: %w", err)
	}
	protobuf := rest.CopyConfig(cfg)
	protobuf.ContentType = runtime.ContentTypeProtobuf
	protobuf.AcceptContentTypes = runtime.ContentTypeProtobuf + "," + runtime.ContentTypeJSON
	crds, err := apiextensionsclient.NewForConfigAndClient(protobuf, httpClient)
	if err != nil {
		return nil, fmt.Errorf("dry-run client: %w", err)
	}
	return &Runner{objects: objects, crds: crds.CustomResourceDefinitions(), mapper: mapper, slots: make(chan struct{}, concurrency)}, nil
}

// Result is what a Run found.
type Result struct {
	// Checked is how many objects were dry-run applied, or, CRDs,
	// validated (Validated of them).
	Checked, Validated int
	// Skipped says, one "Kind namespace/name: why" per object, what was
	// not dry-run: objects of a kind the new objects introduce (its CRD
	// is not served yet), in a namespace they create, or that Flux would
	// not apply.
	Skipped []string
	// RollbackBlocked says, one line per CRD, why going back to the
	// version installed now would not be safe: a CRD whose storage
	// version the new objects change, or a version served now that they
	// stop serving.
	RollbackBlocked []string
	// Took is how long the Run took.
	Took time.Duration
}

// Refusal is an object the API server, or one of its admission webhooks
// or policies, refused.
type Refusal struct {
	// Object is "Kind namespace/name" ("Kind name" when cluster-scoped).
	Object string
	// Message is "<Object>: <the API server's message>", with Secret
	// values masked and at most 1 KiB long.
	Message string
}

func (r *Refusal) Error() string { return r.Message }

// check is one built object's way through a Run.
type check struct {
	obj *unstructured.Unstructured
	// ref is "Kind namespace/name", masked.
	ref      string
	resource metadata.ResourceInterface
	// namespace is the object's namespace when its kind is namespaced.
	namespace string
	// crd is obj's versions when it is a CRD.
	crd *crdVersions
	// body is obj in JSON, the apply patch.
	body []byte

	// Outcomes, each set by the one goroutine that handles the check.
	skip, refusal, rollback string
	absent, checked         bool
	// validated: a CRD the manager validated as the API server does,
	// without asking it.
	validated bool
}

// Run server-side applies every object of built with dryRun=All, as
// DryRunUser, with kustomize-controller's field manager, forcing
// conflicts (as kustomize-controller applies), and
// compares the new CRDs with the installed ones. It returns a *Refusal for
// the first object (in built order) the API server refused, or another
// error when the API server could not be asked; the Result is complete
// only without an error.
func (r *Runner) Run(ctx context.Context, built *Built) (Result, error) {
	start := time.Now()
	if built == nil {
		return Result{}, errors.New("nothing built to dry-run")
	}
	m := newMasker(append(slices.Clone(built.masks), secretObjectValues(built.Objects)...))
	checks, err := r.checks(built.Objects, m)
	if err != nil {
		return Result{}, maskError(m, err)
	}

	// Which Namespaces the new objects create: the objects in them are
	// not asked about, as their namespace does not exist until Flux
	// applies it, which a dry run does not.
	var namespaces []*check
	for _, c := range checks {
		if gvk := c.obj.GroupVersionKind(); gvk.Group == "" && gvk.Kind == "Namespace" && c.resource != nil {
			namespaces = append(namespaces, c)
		}
	}
	err = r.forEach(ctx, namespaces, func(ctx context.Context, c *check) error {
		_, err := c.resource.Get(ctx, c.obj.GetName(), metav1.GetOptions{})
		c.absent = apierrors.IsNotFound(err)
		if err != nil && !c.absent {
			return r.unasked(c, err, "reading Namespace")
		}
		return nil
	})
	if err != nil {
		return Result{}, maskError(m, err)
	}
	created := map[string]bool{}
	for _, c := range namespaces {
		created[c.obj.GetName()] = c.absent
	}

	// Largest first: a check's time goes with an object's size (a CRD's
	// schemas, validated here), and the run ends with its longest.
	bySize := slices.Clone(checks)
	slices.SortStableFunc(bySize, func(a, b *check) int { return len(b.body) - len(a.body) })
	err = r.forEach(ctx, bySize, func(ctx context.Context, c *check) error {
		if c.skip != "" || c.refusal != "" {
			return nil
		}
		if created[c.namespace] {
			c.skip = "its namespace " + c.namespace + " is new: the new objects create it"
			return nil
		}
		return r.check(ctx, c)
	})
	res := Result{Took: time.Since(start)}
	for _, c := range checks {
		if c.refusal != "" {
			return res, &Refusal{Object: c.ref, Message: m.text(c.ref + ": " + c.refusal)}
		}
	}
	if err != nil {
		return res, maskError(m, err)
	}
	for _, c := range checks {
		if c.checked {
			res.Checked++
		}
		if c.validated {
			res.Validated++
		}
		if c.skip != "" {
			res.Skipped = append(res.Skipped, m.text(c.ref+": "+c.skip))
		}
		if c.rollback != "" {
			res.RollbackBlocked = append(res.RollbackBlocked, m.text(c.rollback))
		}
	}
	return res, nil
}

// checks maps every object to its resource, and decides without asking
// the API server what it can: objects Flux would not apply, objects of
// kinds not served.
func (r *Runner) checks(objects []*unstructured.Unstructured, m masker) ([]*check, error) {
	var crds []*crdVersions
	checks := make([]*check, len(objects))
	for i, obj := range objects {
		c := &check{obj: obj, ref: m.text(obj.GetKind() + " " + plan.ObjectRef(obj))}
		checks[i] = c
		crd, err := crdOf(obj)
		if err != nil {
			return nil, err
		}
		if crd != nil {
			c.crd = crd
			crds = append(crds, crd)
		}
	}
	for _, c := range checks {
		if why := fluxSkips(c.obj); why != "" {
			c.skip = why
			continue
		}
		gvk := c.obj.GroupVersionKind()
		mapping, err := r.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
		switch {
		case meta.IsNoMatchError(err):
			if crd := introducing(crds, gvk); crd != "" {
				c.skip = "its kind is not served yet: the new CustomResourceDefinition " + crd + " introduces it"
			} else {
				c.refusal = fmt.Sprintf("the cluster serves no %s in %s, and no new CustomResourceDefinition does", gvk.Kind, gvk.GroupVersion())
			}
			continue
		case err != nil:
			return nil, fmt.Errorf("finding the resource of %s: %w", c.ref, err)
		}
		if c.body, err = json.Marshal(c.obj.Object); err != nil {
			return nil, fmt.Errorf("encoding %s: %w", c.ref, err)
		}
		if mapping.Scope.Name() != meta.RESTScopeNameNamespace {
			c.resource = r.objects.Resource(mapping.Resource)
			continue
		}
		c.namespace = c.obj.GetNamespace()
		if c.namespace == "" {
			c.refusal = "its kind is namespaced and it has no namespace (set it, or the Kustomization's spec.targetNamespace)"
			continue
		}
		c.resource = r.objects.Resource(mapping.Resource).Namespace(c.namespace)
	}
	return checks, nil
}

// check asks the API server about one object: for a CRD, compares it
// with the installed one first; then dry-run applies it.
func (r *Runner) check(ctx context.Context, c *check) error {
	if c.obj.GetAnnotations()[ssaAnnotation] == kustomizev1.IfNotPresentValue || c.obj.GetLabels()[ssaAnnotation] == kustomizev1.IfNotPresentValue {
		_, err := c.resource.Get(ctx, c.obj.GetName(), metav1.GetOptions{})
		if err == nil {
			c.skip = "it exists, and Flux applies it only when absent (" + ssaAnnotation + ": " + kustomizev1.IfNotPresentValue + ")"
			return nil
		}
		if !apierrors.IsNotFound(err) {
			return r.unasked(c, err, "reading")
		}
	}
	if c.crd != nil {
		// From the API server's watch cache (resourceVersion 0), not etcd:
		// a CRD is large, and a copy a moment old tells its versions and
		// schemas as well; Flux's apply reads the current one.
		live, err := r.crds.Get(ctx, c.obj.GetName(), metav1.GetOptions{ResourceVersion: "0"})
		switch {
		case apierrors.IsNotFound(err):
			live = nil
		case err != nil:
			return r.unasked(c, err, "reading the installed")
		default:
			c.rollback = rollbackBlocked(versionsOf(live), c.crd)
		}
		// Validated here, as the API server would (crdvalidation.go); only
		// what that refuses is asked of the API server.
		invalid, err := validateCRD(ctx, c.body, live)
		if err != nil {
			return fmt.Errorf("validating %s: %w", c.ref, err)
		}
		if invalid == "" {
			c.checked, c.validated = true, true
			return nil
		}
	}
	force := true
	_, err := c.resource.Patch(ctx, c.obj.GetName(), types.ApplyPatchType, c.body, metav1.PatchOptions{
		FieldManager: FluxFieldManager,
		Force:        &force,
		DryRun:       []string{metav1.DryRunAll},
	})
	if err == nil {
		c.checked = true
		return nil
	}
	if message, ok := refused(err); ok {
		c.refusal = message
		return nil
	}
	return r.unasked(c, err, "dry-run applying")
}

// refused is the API server's message when err is its answer that it
// would not accept the object (validation, RBAC, admission, a missing
// namespace), not that it could not be asked (unreachable, overloaded,
// unauthenticated, a webhook it could not call).
func refused(err error) (string, bool) {
	var status apierrors.APIStatus
	if !errors.As(err, &status) {
		return "", false
	}
	s := status.Status()
	switch code := s.Code; {
	case code < 400 || code >= 500:
		return "", false
	case code == 401 || code == 408 || code == 429:
		return "", false
	}
	if impersonationRefused(s) {
		return "", false
	}
	return s.Message, true
}

// impersonationRefused tells whether the API server refused the manager
// the impersonation itself (its ClusterRole lacks the rule).
func impersonationRefused(s metav1.Status) bool {
	return s.Reason == metav1.StatusReasonForbidden && s.Details != nil &&
		s.Details.Group == "" && s.Details.Kind == "users" && s.Details.Name == DryRunUser
}

// unasked is err, saying which object and step it stopped at.
func (r *Runner) unasked(c *check, err error, step string) error {
	var status apierrors.APIStatus
	if errors.As(err, &status) && impersonationRefused(status.Status()) {
		return fmt.Errorf("the manager may not impersonate %s (the impersonate rule of its ClusterRole, manifests/rbac/role.yaml): %w", DryRunUser, err)
	}
	return fmt.Errorf("%s %s as %s: %w", step, c.ref, DryRunUser, err)
}

// forEach runs do for every check in order, each holding one of the
// Runner's slots, and returns the first error, which cancels the rest.
func (r *Runner) forEach(ctx context.Context, checks []*check, do func(context.Context, *check) error) error {
	g, gctx := errgroup.WithContext(ctx)
	var waited error
	for _, c := range checks {
		select {
		case r.slots <- struct{}{}:
		case <-gctx.Done():
			waited = gctx.Err()
		}
		if waited != nil {
			break // a check failed, or ctx ended
		}
		g.Go(func() error {
			defer func() { <-r.slots }()
			return do(gctx, c)
		})
	}
	if err := g.Wait(); err != nil {
		return err
	}
	return waited
}

// ssaAnnotation and reconcileAnnotation are kustomize-controller's
// per-object apply settings (label or annotation).
const (
	ssaAnnotation       = "kustomize.toolkit.fluxcd.io/ssa"
	reconcileAnnotation = "kustomize.toolkit.fluxcd.io/reconcile"
)

// fluxSkips says why kustomize-controller would not apply obj (its
// ExclusionSelector), or "".
func fluxSkips(obj *unstructured.Unstructured) string {
	for _, fields := range []map[string]string{obj.GetLabels(), obj.GetAnnotations()} {
		if fields[reconcileAnnotation] == kustomizev1.DisabledValue {
			return "Flux does not apply it (" + reconcileAnnotation + ": " + kustomizev1.DisabledValue + ")"
		}
		if fields[ssaAnnotation] == kustomizev1.IgnoreValue {
			return "Flux does not apply it (" + ssaAnnotation + ": " + kustomizev1.IgnoreValue + ")"
		}
	}
	return ""
}
