// Command manager runs the Capwright controllers: it turns provider and
// Tenant CRs into Flux objects and folds their health back into the CRs'
// status.
package main

import (
	"errors"
	"fmt"
	"maps"
	"net"
	"os"
	"time"

	"github.com/capwright/capwright/internal/releasecopy"
	"github.com/capwright/capwright/internal/resolve"
	capwrightscheme "github.com/capwright/capwright/internal/scheme"
	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	runtimeclient "github.com/fluxcd/pkg/runtime/client"
	"github.com/fluxcd/pkg/runtime/events"
	"github.com/fluxcd/pkg/runtime/logger"
	"github.com/fluxcd/pkg/runtime/pprof"
	"github.com/fluxcd/pkg/runtime/probes"
	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	flag "github.com/spf13/pflag"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
	kuberecorder "k8s.io/client-go/tools/record"
	ctrlruntime "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	// The image has no base layer and so no CA bundle: without system
	// roots, TLS to registries and notification-controller is verified
	// against the Mozilla roots this package embeds.
	_ "golang.org/x/crypto/x509roots/fallback"

	"github.com/capwright/capwright/internal/artifact"
	"github.com/capwright/capwright/internal/catalog"
	"github.com/capwright/capwright/internal/clusterapi"
	"github.com/capwright/capwright/internal/controller/contract"
	ctrlevents "github.com/capwright/capwright/internal/controller/events"
	"github.com/capwright/capwright/internal/controller/provider"
	"github.com/capwright/capwright/internal/controller/tenant"
	"github.com/capwright/capwright/internal/fluxartifact"
	"github.com/capwright/capwright/internal/metrics"
	"github.com/capwright/capwright/internal/upgrades"
)

const controllerName = "capwright"

// version is stamped at release time (-ldflags "-X main.version=v0.1.0").
var version = "dev"

func main() {
	o, err := parseFlags(os.Args[1:])
	if errors.Is(err, flag.ErrHelp) {
		return
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "capwright manager:", err)
		os.Exit(2)
	}
	if o.printVersion {
		fmt.Println(version)
		return
	}
	logger.SetLogger(logger.NewLogger(o.log))
	log := ctrlruntime.Log.WithName("setup")
	log.Info("starting the Capwright manager", "version", version)

	if err := run(o); err != nil {
		log.Error(err, "manager stopped")
		os.Exit(1)
	}
}

func run(o *options) error {
	rules, err := catalog.MirrorRules(o.mirrors, o.mirrorFile)
	if err != nil {
		return err
	}
	size, err := resource.ParseQuantity(o.maxSize)
	if err != nil {
		return fmt.Errorf("--max-artifact-size %q: %w", o.maxSize, err)
	}
	scheme, err := capwrightscheme.New()
	if err != nil {
		return err
	}
	cfg := runtimeclient.GetConfigOrDie(o.client)
	cfg.WarningHandlerWithContext = newAPIWarnings()
	retryInitializing(cfg)
	if err := requireFluxAPIs(cfg); err != nil {
		return err
	}
	mgr, err := ctrlruntime.NewManager(cfg, ctrlruntime.Options{
		Scheme: scheme,
		// Go's profiles under /debug/pprof on the metrics endpoint, as
		// Flux's controllers serve them.
		Metrics:                metricsserver.Options{BindAddress: o.metricsAddr, ExtraHandlers: pprof.GetHandlers()},
		HealthProbeBindAddress: o.healthAddr,
		LeaderElection:         o.leaderElection.Enable,
		LeaseDuration:          &o.leaderElection.LeaseDuration,
		RenewDeadline:          &o.leaderElection.RenewDeadline,
		RetryPeriod:            &o.leaderElection.RetryPeriod,
		LeaderElectionID:       "capwright-leader-election",
		// The Deployment sets RUNTIME_NAMESPACE from the pod's namespace,
		// as Flux's controllers have it; empty means the in-cluster
		// service account's namespace.
		LeaderElectionNamespace: os.Getenv("RUNTIME_NAMESPACE"),
		// A replaced pod hands the lease over at once instead of making its
		// successor wait out the lease, as Flux's controllers do
		// (--leader-election-release-on-cancel, true by default).
		LeaderElectionReleaseOnCancel: o.leaderElection.ReleaseOnCancel,
		// Of the kinds Tenants manage, only what Capwright wrote.
		// Cached objects without their managedFields: nothing reads them
		// from the cache (apply compares what it wants with the fields
		// themselves), and on objects written server-side they are often
		// the largest part of the metadata, held for every Flux object,
		// Cluster and Tenant of the fleet.
		Cache: cache.Options{ByObject: cacheByObject(), DefaultTransform: cache.TransformStripManagedFields()},
		Client: client.Options{Cache: &client.CacheOptions{
			// Secrets are read when needed, not cached cluster-wide.
			DisableFor: []client.Object{&corev1.Secret{}},
		}},
	})
	if err != nil {
		return err
	}
	recorder, err := eventRecorder(mgr, o.eventsAddr)
	if err != nil {
		return err
	}
	storage, err := artifactStorage(mgr, o)
	if err != nil {
		return err
	}
	fetcher := &artifact.Fetcher{MaxArtifactSize: size.Value()}
	timelines := provider.NewTimelines()
	recorderMetrics := metrics.NewRecorder(ctrlmetrics.Registry)
	kinds := provider.Kinds()
	corePreflights := provider.NewCorePreflights()
	upgradeChecks := &provider.UpgradeChecks{Interval: o.upgradeCheck, Lister: &upgrades.Lister{Fetcher: fetcher}, Started: time.Now()}
	servedAPIs, err := provider.NewServedAPIs(cfg)
	if err != nil {
		return err
	}
	// One resolution stage for every kind: its memory of what tags and
	// releases resolved to, and of checked artifacts, is shared.
	source := &resolve.Resolver{
		Client:              mgr.GetClient(),
		Reader:              mgr.GetAPIReader(),
		Fetcher:             fetcher,
		Cache:               &resolve.ArtifactCache{},
		Resolutions:         &resolve.Resolutions{},
		Mirrors:             rules,
		CatalogOCIArtifacts: o.catalogOCI,
		InsecureRegistries:  o.insecure,
		Releases:            resolve.ReleaseSettings{RedirectHosts: o.releaseRedirectHosts, Recheck: o.releaseRecheck},
		// The Deployment sets RUNTIME_NAMESPACE (see run); outside the
		// cluster no copies are kept.
		Copies:          releasecopy.Store{Client: mgr.GetClient(), Reader: mgr.GetAPIReader(), Namespace: os.Getenv("RUNTIME_NAMESPACE")},
		RegistryTimeout: o.registryTimeout,
		ResyncInterval:  o.resync,
	}
	dryRun, err := upgradeDryRun(cfg, mgr)
	if err != nil {
		return err
	}
	var reconcilers []*provider.Reconciler
	for _, k := range kinds {
		r := &provider.Reconciler{
			Client:         mgr.GetClient(),
			Reader:         mgr.GetAPIReader(),
			Kind:           k,
			Kinds:          kinds,
			Source:         source,
			Recorder:       recorder,
			Artifacts:      storage,
			RESTMapper:     mgr.GetRESTMapper(),
			Timelines:      timelines,
			Metrics:        recorderMetrics,
			CorePreflights: corePreflights,
			Upgrades:       upgradeChecks,
			APIs:           servedAPIs,
			DryRun:         dryRun,
		}
		if err := r.SetupWithManager(mgr, controller.Options{MaxConcurrentReconciles: o.concurrent}); err != nil {
			return fmt.Errorf("setting up the %s controller: %w", k.Name, err)
		}
		reconcilers = append(reconcilers, r)
	}
	if storage != nil {
		// Any replica serves the artifacts the leader stored.
		storage.Restore = provider.RestoreAdditional(reconcilers...)
	}
	if err := setupTenants(mgr, cfg, recorder, recorderMetrics, storage, rules, o); err != nil {
		return err
	}
	if err := setupContract(mgr, cfg, recorder, recorderMetrics, rules, o); err != nil {
		return err
	}
	probes.SetupChecks(mgr, ctrlruntime.Log.WithName("setup"))
	return mgr.Start(ctrlruntime.SetupSignalHandler())
}

// eventRecorder records the controllers' events as Kubernetes events and,
// with --events-addr, forwards them to notification-controller in the
// background (Flux's event shape), so that a notification-controller that
// does not answer never holds a reconcile.
func eventRecorder(mgr ctrlruntime.Manager, eventsAddr string) (kuberecorder.EventRecorder, error) {
	log := ctrlruntime.Log.WithName("events")
	var notify kuberecorder.EventRecorder
	if eventsAddr != "" {
		flux, err := events.NewRecorderForScheme(mgr.GetScheme(), ctrlevents.Discard{}, log, eventsAddr, controllerName)
		if err != nil {
			return nil, fmt.Errorf("--events-addr %q: %w", eventsAddr, err)
		}
		notify = flux
	}
	// core/v1 Events with annotations, as Flux's controllers record them
	// and notification-controller's users expect; the events/v1 recorder
	// that replaces this API has no annotated events.
	kube := mgr.GetEventRecorderFor(controllerName) //nolint:staticcheck // see above
	f := ctrlevents.NewForwarder(kube, notify, log, ctrlevents.DefaultForwardQueue)
	if err := mgr.Add(f); err != nil {
		return nil, err
	}
	return f, nil
}

// artifactStorage sets up the storage and HTTP server of the artifacts
// Flux fetches for providers' additional manifests; nil without
// --artifact-storage-path.
func artifactStorage(mgr ctrlruntime.Manager, o *options) (*fluxartifact.Storage, error) {
	if o.storagePath == "" {
		return nil, nil
	}
	advertise := o.storageURL
	if advertise == "" {
		host, _, err := net.SplitHostPort(o.storageAddr)
		if err != nil || host == "" {
			return nil, fmt.Errorf("--artifact-advertise-url is required when --artifact-bind-address (%q) names no host: set the URL kustomize-controller reaches the manager at, e.g. http://capwright-artifacts.capwright-system.svc.cluster.local:80", o.storageAddr)
		}
		advertise = "http://" + o.storageAddr
	}
	storage, err := fluxartifact.New(o.storagePath, advertise)
	if err != nil {
		return nil, err
	}
	if err := mgr.Add(&fluxartifact.Server{Storage: storage, Addr: o.storageAddr}); err != nil {
		return nil, err
	}
	return storage, nil
}

// setupTenants sets up the Tenant controller, which hands Flux the target
// namespaces of kustomize stacks through the same artifact storage as the
// providers' additional manifests (and restores them there for any
// replica). Clusters and kubeconfig Secrets are watched once a Tenant
// exists and the Cluster API's Cluster kind is served — at once, or as
// soon as it is installed (often by the manager's own provider
// controllers): a watch on a kind that is not served would stop the
// whole manager, and one nothing needs costs a cache of every Cluster.
// Until then every Tenant says on its own status that no cluster can be
// selected yet.
func setupTenants(mgr ctrlruntime.Manager, cfg *rest.Config, recorder kuberecorder.EventRecorder, m *metrics.Recorder, storage *fluxartifact.Storage, rules catalog.Mirrors, o *options) error {
	r := &tenant.Reconciler{
		Client:           mgr.GetClient(),
		Reader:           mgr.GetAPIReader(),
		Clusters:         mgr.GetAPIReader(),
		ClusterAPIServed: clusterAPIServed(cfg),
		Recorder:         recorder,
		ResyncInterval:   o.resync,
		Metrics:          m,
		// The Deployment sets RUNTIME_NAMESPACE (see run).
		ForbiddenNamespaces: o.tenantForbiddenNamespaces(os.Getenv("RUNTIME_NAMESPACE")),
		Artifacts:           storage,
		Sharding:            o.sharding,
		Mirrors:             rules,
		InsecureRegistries:  o.insecure,
	}
	if storage != nil {
		storage.Restore = r.RestoreArtifacts(storage.Restore)
	}
	if err := r.SetupWithManager(mgr, controller.Options{MaxConcurrentReconciles: o.concurrent}); err != nil {
		return fmt.Errorf("setting up the Tenant controller: %w", err)
	}
	return nil
}

// setupContract sets up the controllers of CapwrightControlPlane and
// CapwrightCluster. Clusters are watched once an object of either kind
// exists and Cluster API is served; until then each object looks at its
// Cluster every resync and whenever Cluster API sets itself as its owner.
func setupContract(mgr ctrlruntime.Manager, cfg *rest.Config, recorder kuberecorder.EventRecorder, m *metrics.Recorder, rules catalog.Mirrors, o *options) error {
	shared := &contract.Shared{
		Client:             mgr.GetClient(),
		Reader:             mgr.GetAPIReader(),
		Recorder:           recorder,
		Metrics:            m,
		Mirrors:            rules,
		InsecureRegistries: o.insecure,
		ResyncInterval:     o.resync,
		ClusterAPIServed:   clusterAPIServed(cfg),
	}
	if err := contract.Setup(mgr, shared, controller.Options{MaxConcurrentReconciles: o.concurrent}); err != nil {
		return fmt.Errorf("setting up the Cluster API contract controllers: %w", err)
	}
	return nil
}

// clusterAPIServed asks whether the API server serves Cluster API's
// Cluster kind.
func clusterAPIServed(cfg *rest.Config) func() (bool, error) {
	return func() (bool, error) {
		return served(cfg, clusterapi.ClusterGVK)
	}
}

// served tells whether the API server serves gvk.
func served(cfg *rest.Config, gvk schema.GroupVersionKind) (bool, error) {
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return false, err
	}
	resources, err := dc.ServerResourcesForGroupVersion(gvk.GroupVersion().String())
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("discovering %s: %w", gvk.GroupVersion(), err)
	}
	for _, r := range resources.APIResources {
		if r.Kind == gvk.Kind {
			return true, nil
		}
	}
	return false, nil
}

// requireFluxAPIs fails with a clear message when a Flux API Capwright
// writes is not served: Capwright extends Flux and needs its source,
// kustomize and helm controllers installed.
func requireFluxAPIs(cfg *rest.Config) error {
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return err
	}
	var missing []error
	for _, gvk := range []schema.GroupVersionKind{
		sourcev1.GroupVersion.WithKind(sourcev1.OCIRepositoryKind),
		kustomizev1.GroupVersion.WithKind(kustomizev1.KustomizationKind),
		helmv2.GroupVersion.WithKind(helmv2.HelmReleaseKind),
		sourcev1.GroupVersion.WithKind(sourcev1.ExternalArtifactKind),
	} {
		resources, err := dc.ServerResourcesForGroupVersion(gvk.GroupVersion().String())
		found := false
		if err == nil {
			for _, r := range resources.APIResources {
				if r.Kind == gvk.Kind {
					found = true
				}
			}
		}
		if !found {
			missing = append(missing, fmt.Errorf("%s is not served", gvk))
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("this cluster does not serve the Flux APIs Capwright writes (it needs the source, kustomize and helm controllers of Flux v2.9 or later; run `flux install`): %w", errors.Join(missing...))
	}
	return nil
}

// cacheByObject is what the controllers restrict the cache to, by kind.
func cacheByObject() map[client.Object]cache.ByObject {
	out := tenant.CacheByObject()
	maps.Copy(out, provider.CacheByObject())
	return out
}
