package main

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	"github.com/fluxcd/pkg/apis/kustomize"
	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/capwright/capwright/api/providers/v1alpha1"
	"github.com/capwright/capwright/internal/artifact"
	"github.com/capwright/capwright/internal/clusterctl"
	"github.com/capwright/capwright/internal/plan"
	"github.com/capwright/capwright/internal/render"
	"github.com/capwright/capwright/tests/e2e/framework"
	"github.com/capwright/capwright/tests/plane"
)

// buildManager builds the manager of the working tree; the benchmark runs
// from the repository root, as make bench runs it.
func buildManager(ctx context.Context, out string) error {
	if _, err := os.Stat("cmd/manager"); err != nil {
		return fmt.Errorf("run the benchmark from the repository root (make bench): %w", err)
	}
	cmd := exec.CommandContext(ctx, "go", "build", "-o", out, "./cmd/manager")
	if log, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("building the Capwright manager: %w\n%s", err, log)
	}
	return nil
}

func releaseDir(p *plane.Plane, version string) string {
	return filepath.Dir(p.CAPIComponentsPath(version, "metadata.yaml"))
}

// capwright installs the providers with only spec.version, through the
// catalog, with the manager the working tree builds: from OCI artifacts in
// the plane's registry through a registry mirror rule, as at an
// air-gapped site that mirrored them; or, with releases, from their GitHub
// releases as clusterctl installs them, served by the plane's stand-in for
// github.com in GitHub's layout and redirect, through the mirror rule
// github.com=https://<stand-in> (as tests/e2e/providers and make demo).
type capwright struct {
	// metrics is the running manager's metrics endpoint.
	metrics string
	// releases installs from release URLs instead of OCI artifacts.
	releases bool
	// server is the run's stand-in for github.com (releases only).
	server *plane.ReleaseServer
}

func (cw *capwright) Name() string {
	if cw.releases {
		return "capwright-release"
	}
	return "capwright"
}

func (*capwright) User() string { return plane.CapwrightUser }

func (cw *capwright) Publish(ctx context.Context, p *plane.Plane, version string) error {
	if !cw.releases {
		for _, pt := range providers {
			if _, err := framework.PublishCAPIProvider(ctx, p.Registry.Host, releaseDir(p, version), pt.Type, pt.Name, version); err != nil {
				return err
			}
		}
		return nil
	}
	if cw.server == nil {
		s, err := plane.StartReleaseServer(plane.ReleaseServerOptions{})
		if err != nil {
			return err
		}
		cw.server = s
	}
	// The same files the OCI artifacts hold, as the release of
	// kubernetes-sigs/cluster-api at that tag.
	return cw.server.PublishDir("kubernetes-sigs", "cluster-api", version, releaseDir(p, version))
}

// Close stops the run's stand-in for github.com.
func (cw *capwright) Close() error {
	if cw.server == nil {
		return nil
	}
	err := cw.server.Close()
	cw.server = nil
	return err
}

// InstallCRDs installs Capwright's CRDs ahead of the manager.
func (cw *capwright) InstallCRDs(ctx context.Context, p *plane.Plane) error {
	return p.InstallCapwrightCRDs(ctx)
}

func (cw *capwright) Start(ctx context.Context, p *plane.Plane) (int, error) {
	opts := plane.CapwrightOptions{Args: []string{
		"--registry-mirror=registry.k8s.io/cluster-api/manifests=" + p.Registry.Host + "/" + framework.CAPIRepository,
		"--insecure-registry=" + p.Registry.Host,
	}}
	if cw.releases {
		// No mirror rule for registry.k8s.io: the catalog sends the
		// providers to their GitHub release, the rule for github.com to
		// the stand-in, whose certificate the manager trusts as it
		// trusts GitHub's.
		args, env, err := cw.server.ManagerSettings(p.RunDir)
		if err != nil {
			return 0, err
		}
		opts = plane.CapwrightOptions{Args: args, Env: env}
	}
	m, err := p.StartCapwright(ctx, opts)
	if err != nil {
		return 0, err
	}
	cw.metrics = m.MetricsURL()
	return m.PID(), nil
}

// profile records the manager's CPU profile for the given time into path,
// from the pprof endpoints it serves on its metrics address.
func (cw *capwright) profile(ctx context.Context, d time.Duration, path string) error {
	url := strings.TrimSuffix(cw.metrics, "/metrics") + fmt.Sprintf("/debug/pprof/profile?seconds=%d", int(d.Seconds()))
	return saveProfile(ctx, http.DefaultClient, url, path)
}

// trace records the manager's execution trace for the given time into
// path.
func (cw *capwright) trace(ctx context.Context, d time.Duration, path string) error {
	url := strings.TrimSuffix(cw.metrics, "/metrics") + fmt.Sprintf("/debug/pprof/trace?seconds=%d", int(d.Seconds()))
	return saveProfile(ctx, http.DefaultClient, url, path)
}

func capwrightObject(pt providerSpec) v1alpha1.Provider {
	om := metav1.ObjectMeta{Namespace: pt.Namespace, Name: pt.Name}
	switch pt.Type {
	case v1alpha1.CoreProviderType:
		return &v1alpha1.CoreProvider{ObjectMeta: om}
	case v1alpha1.BootstrapProviderType:
		return &v1alpha1.BootstrapProvider{ObjectMeta: om}
	default:
		return &v1alpha1.ControlPlaneProvider{ObjectMeta: om}
	}
}

func (*capwright) Apply(ctx context.Context, c client.Client, version string) error {
	for _, pt := range providers {
		obj := capwrightObject(pt)
		err := c.Get(ctx, client.ObjectKeyFromObject(obj.(client.Object)), obj.(client.Object))
		if client.IgnoreNotFound(err) != nil {
			return err
		}
		if err != nil {
			obj.GetSpec().Version = version
			if err := c.Create(ctx, obj.(client.Object)); err != nil {
				return err
			}
			continue
		}
		if err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
			if err := c.Get(ctx, client.ObjectKeyFromObject(obj.(client.Object)), obj.(client.Object)); err != nil {
				return err
			}
			obj.GetSpec().Version = version
			return c.Update(ctx, obj.(client.Object))
		}); err != nil {
			return err
		}
	}
	return nil
}

func (*capwright) Watched(pt providerSpec) client.Object {
	return capwrightObject(pt).(client.Object)
}

func (*capwright) Ready(ctx context.Context, c client.Client, pt providerSpec, version string) (bool, string) {
	obj := capwrightObject(pt)
	if err := c.Get(ctx, client.ObjectKeyFromObject(obj.(client.Object)), obj.(client.Object)); err != nil {
		return false, err.Error()
	}
	ok, msg := conditionTrue(obj.GetConditions(), v1alpha1.ReadyCondition, obj.GetGeneration())
	return ok && obj.GetStatus().InstalledVersion == version, msg
}

func (*capwright) RequestReconcile(ctx context.Context, c client.Client) error {
	for _, pt := range providers {
		if err := requestAnnotation(ctx, c, capwrightObject(pt).(client.Object)); err != nil {
			return err
		}
	}
	return nil
}

// bareFlux is what a platform team writes by hand: per provider an
// OCIRepository of the same artifact by tag and a Kustomization that
// applies its components file, waits for health, prunes, and substitutes
// the components' variable defaults; no dependsOn. With contract, the
// Kustomization also carries what Capwright's carries for clusterctl's
// contract: the provider's namespace as targetNamespace, clusterctl's
// labels on every object, CRDs and Namespaces kept when it is deleted,
// and the same retry interval — Flux's share of the time Capwright's
// objects take.
type bareFlux struct{ contract bool }

func (b bareFlux) Name() string {
	if b.contract {
		return "flux+contract"
	}
	return "flux"
}

func (bareFlux) User() string                                     { return "" }
func (bareFlux) Start(context.Context, *plane.Plane) (int, error) { return 0, nil }
func (b bareFlux) Publish(ctx context.Context, p *plane.Plane, version string) error {
	fluxRegistry = p.Registry.Host
	return (&capwright{}).Publish(ctx, p, version)
}

// fluxRegistry is the plane's registry host of the current run.
var fluxRegistry string

func fluxName(pt providerSpec) string { return strings.ToLower(pt.Type) + "-" + pt.Name }

func (b bareFlux) Apply(ctx context.Context, c client.Client, version string) error {
	for _, pt := range providers {
		key := client.ObjectKey{Namespace: pt.Namespace, Name: fluxName(pt)}
		repo := &sourcev1.OCIRepository{}
		err := c.Get(ctx, key, repo)
		if client.IgnoreNotFound(err) != nil {
			return err
		}
		if err == nil {
			if err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
				if err := c.Get(ctx, key, repo); err != nil {
					return err
				}
				repo.Spec.Reference.Tag = version
				return c.Update(ctx, repo)
			}); err != nil {
				return err
			}
			continue
		}
		ignore := "/*\n!/" + clusterctl.ComponentsFile(pt.Type) + "\n"
		repo = &sourcev1.OCIRepository{
			ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name},
			Spec: sourcev1.OCIRepositorySpec{
				URL:       "oci://" + fluxRegistry + "/" + framework.CAPIRepository + "/" + pt.Type + "-" + pt.Name,
				Reference: &sourcev1.OCIRepositoryRef{Tag: version},
				Interval:  metav1.Duration{Duration: 10 * time.Minute},
				Insecure:  true,
				Ignore:    &ignore,
			},
		}
		ks := &kustomizev1.Kustomization{
			ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name},
			Spec: kustomizev1.KustomizationSpec{
				SourceRef: kustomizev1.CrossNamespaceSourceReference{Kind: sourcev1.OCIRepositoryKind, Name: key.Name},
				Path:      "./",
				Prune:     true,
				Wait:      true,
				Interval:  metav1.Duration{Duration: 10 * time.Minute},
				Timeout:   &metav1.Duration{Duration: 5 * time.Minute},
				PostBuild: &kustomizev1.PostBuild{SubstituteStrategy: kustomizev1.SubstituteStrategyAlways},
			},
		}
		if b.contract {
			ks.Spec.TargetNamespace = pt.Namespace
			ks.Spec.RetryInterval = &metav1.Duration{Duration: time.Minute}
			ks.Spec.CommonMetadata = &kustomizev1.CommonMetadata{Labels: map[string]string{
				"cluster.x-k8s.io/provider": clusterctl.ProviderLabelValue(pt.Type, pt.Name), "clusterctl.cluster.x-k8s.io": ""}}
			for _, target := range []kustomize.Selector{{Group: "apiextensions.k8s.io", Version: "v1", Kind: "CustomResourceDefinition"}, {Version: "v1", Kind: "Namespace"}} {
				ks.Spec.Patches = append(ks.Spec.Patches, kustomize.Patch{Target: &target, Patch: fmt.Sprintf(
					"apiVersion: %s\nkind: %s\nmetadata:\n  name: not-used\n  annotations:\n    kustomize.toolkit.fluxcd.io/prune: disabled\n",
					strings.TrimPrefix(target.Group+"/"+target.Version, "/"), target.Kind)})
			}
		}
		for _, o := range []client.Object{repo, ks} {
			if err := c.Create(ctx, o); err != nil {
				return err
			}
		}
	}
	return nil
}

func (bareFlux) Watched(pt providerSpec) client.Object {
	return &kustomizev1.Kustomization{ObjectMeta: metav1.ObjectMeta{Namespace: pt.Namespace, Name: fluxName(pt)}}
}

func (b bareFlux) Ready(ctx context.Context, c client.Client, pt providerSpec, version string) (bool, string) {
	var ks kustomizev1.Kustomization
	if err := c.Get(ctx, client.ObjectKeyFromObject(b.Watched(pt)), &ks); err != nil {
		return false, err.Error()
	}
	ok, msg := conditionTrue(ks.Status.Conditions, "Ready", ks.Generation)
	return ok && ks.Status.ObservedGeneration == ks.Generation && strings.HasPrefix(ks.Status.LastAppliedRevision, version+"@"), msg
}

func (bareFlux) RequestReconcile(ctx context.Context, c client.Client) error {
	for _, pt := range providers {
		key := client.ObjectKey{Namespace: pt.Namespace, Name: fluxName(pt)}
		for _, o := range []client.Object{&sourcev1.OCIRepository{}, &kustomizev1.Kustomization{}} {
			o.SetNamespace(key.Namespace)
			o.SetName(key.Name)
			if err := requestAnnotation(ctx, c, o); err != nil {
				return err
			}
		}
	}
	return nil
}

// operator is cluster-api-operator v0.29.0, run as its own user with its
// webhooks off, reading the same release files from the plane's registry
// in the layout it fetches (one layer per file).
type operator struct{ oci map[string]string }

func (operator) Name() string { return "cluster-api-operator" }
func (operator) User() string { return plane.ClusterAPIOperatorUser }

func (o *operator) Publish(ctx context.Context, p *plane.Plane, version string) error {
	if o.oci == nil {
		o.oci = map[string]string{}
	}
	for _, pt := range providers {
		ref, err := framework.PublishForClusterAPIOperator(ctx, p.Registry.Host, releaseDir(p, version), pt.Type, pt.Name, version)
		if err != nil {
			return err
		}
		o.oci[pt.Type+"@"+version] = ref
	}
	return nil
}

func (operator) Start(ctx context.Context, p *plane.Plane) (int, error) {
	proc, err := p.StartClusterAPIOperator(ctx)
	if err != nil {
		return 0, err
	}
	return proc.PID(), nil
}

func (o *operator) Apply(ctx context.Context, c client.Client, version string) error {
	for _, pt := range providers {
		want := framework.ClusterAPIOperatorProvider(pt.Type, pt.Namespace, pt.Name, version, o.oci[pt.Type+"@"+version])
		current := &unstructured.Unstructured{}
		current.SetGroupVersionKind(want.GroupVersionKind())
		err := c.Get(ctx, client.ObjectKeyFromObject(want), current)
		if client.IgnoreNotFound(err) != nil {
			return err
		}
		if err != nil {
			if err := c.Create(ctx, want); err != nil {
				return err
			}
			continue
		}
		if err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
			if err := c.Get(ctx, client.ObjectKeyFromObject(want), current); err != nil {
				return err
			}
			current.Object["spec"] = want.Object["spec"]
			return c.Update(ctx, current)
		}); err != nil {
			return err
		}
	}
	return nil
}

func (o *operator) Watched(pt providerSpec) client.Object { return operatorObject(pt) }

// operatorObject is the operator's provider object for pt, empty but for
// its kind and key.
func operatorObject(pt providerSpec) *unstructured.Unstructured {
	want := framework.ClusterAPIOperatorProvider(pt.Type, pt.Namespace, pt.Name, fromVersion, "")
	obj := &unstructured.Unstructured{}
	obj.SetGroupVersionKind(want.GroupVersionKind())
	obj.SetNamespace(want.GetNamespace())
	obj.SetName(want.GetName())
	return obj
}

func (o *operator) Ready(ctx context.Context, c client.Client, pt providerSpec, version string) (bool, string) {
	current := operatorObject(pt)
	if err := c.Get(ctx, client.ObjectKeyFromObject(current), current); err != nil {
		return false, err.Error()
	}
	return framework.ClusterAPIOperatorProviderReady(current, version)
}

func (o *operator) RequestReconcile(ctx context.Context, c client.Client) error {
	for _, pt := range providers {
		if err := requestAnnotation(ctx, c, operatorObject(pt)); err != nil {
			return err
		}
	}
	return nil
}

// capwrightObjects applies the Flux objects Capwright's manager writes —
// rendered by the same code from what its preflight establishes: the
// OCIRepository pinned to the digest, clusterctl's namespace fixes, the
// contract's labels and prune protection — with no manager running. Its
// times against capwright's tell the cost of the manager's presence (its
// preflight, watches, status writes and events while Flux applies) from
// the cost of the objects themselves; against flux+contract, the cost of
// what the objects add (the digest pin, the namespace fixes, the
// installer identity). The objects of each version are rendered when it
// is published, before any clock runs, and an upgrade writes only the
// objects that changed, as the manager does (apply.IfChanged): what is
// timed is Flux's work, as for bare Flux.
type capwrightObjects struct {
	// rendered holds each version's objects, in the order the manager
	// writes them; applied, what was last applied of each (JSON, by
	// kind/namespace/name) on the current plane.
	rendered map[string][]*unstructured.Unstructured
	applied  map[string]string
	// digests of the published artifacts, by version and provider type.
	digests map[string]map[string]string
}

func (*capwrightObjects) Name() string { return "flux+capwright-objects" }
func (*capwrightObjects) User() string { return "" }
func (o *capwrightObjects) Start(ctx context.Context, p *plane.Plane) (int, error) {
	o.applied = map[string]string{}
	return 0, p.InstallProviderInstallerRole(ctx)
}

// idleManager is flux+capwright-objects with Capwright's manager running
// beside Flux but given nothing to do: no provider CR names the objects,
// so it only watches. Its times against flux+capwright-objects tell what a
// watching controller costs the plane, apart from any work of Capwright's;
// against capwright, what Capwright's own work (preflight, status folds,
// events) adds. Not in the default set: it answers a diagnostic question.
type idleManager struct {
	*capwrightObjects
	manager capwright
}

func (*idleManager) Name() string { return "flux+capwright-objects+idle-manager" }

func (m *idleManager) Start(ctx context.Context, p *plane.Plane) (int, error) {
	m.applied = map[string]string{}
	return m.manager.Start(ctx, p)
}

func (o *capwrightObjects) Publish(ctx context.Context, p *plane.Plane, version string) error {
	fluxRegistry = p.Registry.Host
	if o.digests == nil {
		o.digests, o.rendered = map[string]map[string]string{}, map[string][]*unstructured.Unstructured{}
	}
	o.digests[version] = map[string]string{}
	o.rendered[version] = nil
	for _, pt := range providers {
		if _, err := framework.PublishCAPIProvider(ctx, p.Registry.Host, releaseDir(p, version), pt.Type, pt.Name, version); err != nil {
			return err
		}
		ref := artifact.Reference{Host: p.Registry.Host, Repository: framework.CAPIRepository + "/" + pt.Type + "-" + pt.Name, Tag: version}
		digest, err := (&artifact.Fetcher{}).Resolve(ctx, ref, artifact.Access{PlainHTTP: true})
		if err != nil {
			return err
		}
		o.digests[version][pt.Type] = digest
		objs, err := renderCapwrightObjects(filepath.Join(releaseDir(p, version), clusterctl.ComponentsFile(pt.Type)), pt, version, digest)
		if err != nil {
			return err
		}
		o.rendered[version] = append(o.rendered[version], objs...)
	}
	return nil
}

// renderCapwrightObjects renders a provider's installer identity and Flux
// objects as the manager writes them, with no owner: the garbage
// collector would delete objects owned by a provider that does not exist.
func renderCapwrightObjects(componentsPath string, pt providerSpec, version, digest string) ([]*unstructured.Unstructured, error) {
	components, err := os.ReadFile(componentsPath)
	if err != nil {
		return nil, err
	}
	decoded, err := clusterctl.Decode(components)
	if err != nil {
		return nil, err
	}
	patches, err := decoded.NamespacePatches(pt.Namespace)
	if err != nil {
		return nil, err
	}
	provider := capwrightObject(pt)
	provider.GetSpec().Version = version
	in := render.Input{
		Provider:         provider,
		ArtifactURL:      "oci://" + fluxRegistry + "/" + framework.CAPIRepository + "/" + pt.Type + "-" + pt.Name,
		Tag:              version,
		Digest:           digest,
		Insecure:         true,
		ComponentsFile:   clusterctl.ComponentsFile(pt.Type),
		ProviderLabel:    clusterctl.ProviderLabelValue(pt.Type, pt.Name),
		NamespacePatches: patches,

		SkipCRDSubstitution: decoded.CRDsSubstitutionFree(),
	}
	objs, err := render.Provider(in)
	if err != nil {
		return nil, err
	}
	inst, err := render.ProviderInstaller(in)
	if err != nil {
		return nil, err
	}
	var out []*unstructured.Unstructured
	for _, obj := range []client.Object{inst.ServiceAccount, inst.ClusterRoleBinding, objs.OCIRepository, objs.Kustomization} {
		obj.SetOwnerReferences(nil)
		// As the manager applies it (apply.IfChanged): its hash
		// annotation, spec.suspend spelled out, Flux's finalizer.
		u, err := plan.AsApplied(obj, plan.HashAnnotation)
		if err != nil {
			return nil, err
		}
		out = append(out, u)
	}
	return out, nil
}

func (o *capwrightObjects) Apply(ctx context.Context, c client.Client, version string) error {
	for _, u := range o.rendered[version] {
		key := u.GetKind() + "/" + u.GetNamespace() + "/" + u.GetName()
		data, err := u.MarshalJSON()
		if err != nil {
			return err
		}
		if o.applied[key] == string(data) {
			continue
		}
		if err := c.Apply(ctx, client.ApplyConfigurationFromUnstructured(u), client.FieldOwner(benchUser), client.ForceOwnership); err != nil {
			return err
		}
		o.applied[key] = string(data)
	}
	return nil
}

func (o *capwrightObjects) Watched(pt providerSpec) client.Object {
	return &kustomizev1.Kustomization{ObjectMeta: metav1.ObjectMeta{Namespace: pt.Namespace, Name: render.ObjectName(pt.Type, pt.Name)}}
}

func (o *capwrightObjects) Ready(ctx context.Context, c client.Client, pt providerSpec, version string) (bool, string) {
	var ks kustomizev1.Kustomization
	if err := c.Get(ctx, client.ObjectKeyFromObject(o.Watched(pt)), &ks); err != nil {
		return false, err.Error()
	}
	ok, msg := conditionTrue(ks.Status.Conditions, "Ready", ks.Generation)
	return ok && ks.Status.ObservedGeneration == ks.Generation && strings.HasSuffix(ks.Status.LastAppliedRevision, o.digests[version][pt.Type]), msg
}

// RequestReconcile asks Flux for a reconcile of the objects, as for bare
// Flux: they have the same names.
func (*capwrightObjects) RequestReconcile(ctx context.Context, c client.Client) error {
	return bareFlux{}.RequestReconcile(ctx, c)
}
