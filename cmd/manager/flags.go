package main

import (
	"fmt"
	"strings"
	"time"

	"github.com/fluxcd/pkg/runtime/client"
	feathelper "github.com/fluxcd/pkg/runtime/features"
	"github.com/fluxcd/pkg/runtime/leaderelection"
	"github.com/fluxcd/pkg/runtime/logger"
	flag "github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/capwright/capwright/internal/controller/provider"
	"github.com/capwright/capwright/internal/render"
	"github.com/capwright/capwright/internal/resolve"
)

// features are Capwright's feature gates (--feature-gates=Name=true), as
// Flux's controllers have them; none yet. A gate that is not listed is
// refused at start-up.
var features = map[string]bool{}

// options are the manager's flags: Flux's runtime options (logging, the
// Kubernetes client, leader election, feature gates), named as Flux's
// controllers name them, and Capwright's own.
type options struct {
	printVersion bool

	metricsAddr, healthAddr, eventsAddr string
	concurrent                          int
	registryTimeout                     time.Duration
	resync                              time.Duration

	mirrorFile, maxSize                  string
	mirrors, insecure                    []string
	storagePath, storageAddr, storageURL string
	tenantForbidden                      []string
	fluxSharding                         string
	sharding                             render.Sharding
	catalogOCI                           bool
	releaseRedirectHosts                 []string
	releaseRecheck                       time.Duration
	upgradeCheck                         time.Duration

	client         client.Options
	log            logger.Options
	leaderElection leaderelection.Options
	featureGates   feathelper.FeatureGates
}

// parseFlags reads the manager's command line.
func parseFlags(args []string) (*options, error) {
	o := &options{}
	fs := o.flagSet()
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if rest := fs.Args(); len(rest) > 0 {
		return nil, fmt.Errorf("unexpected arguments %q: the manager takes flags only (see --help)", rest)
	}
	for _, ns := range o.tenantForbidden {
		if errs := validation.IsDNS1123Label(ns); len(errs) > 0 {
			return nil, fmt.Errorf("--tenant-forbidden-namespaces: %q is not a namespace name (%s); list namespace names, comma-separated", ns, strings.Join(errs, "; "))
		}
	}
	if o.upgradeCheck < 0 {
		return nil, fmt.Errorf("--upgrade-check-interval: %s is negative; give a duration such as 6h, or 0 to turn the checks off", o.upgradeCheck)
	}
	sharding, err := render.ParseSharding(o.fluxSharding)
	if err != nil {
		return nil, fmt.Errorf("--flux-sharding: %w", err)
	}
	o.sharding = sharding
	if err := o.featureGates.SupportedFeatures(features); err != nil {
		return nil, fmt.Errorf("--feature-gates: %w (this version knows %d feature gates; see docs/install.md)", err, len(features))
	}
	return o, nil
}

// flagSet defines the manager's flags on o; the generated reference
// (docs/reference/manager.md) reads the same set.
func (o *options) flagSet() *flag.FlagSet {
	fs := flag.NewFlagSet("manager", flag.ContinueOnError)
	fs.BoolVar(&o.printVersion, "version", false, "Print the version and exit.")
	fs.StringVar(&o.metricsAddr, "metrics-addr", ":8080", "The address the metrics endpoint binds to; 0 disables it.")
	fs.StringVar(&o.healthAddr, "health-addr", ":9440", "The address the health endpoint (/healthz, /readyz) binds to.")
	fs.StringVar(&o.eventsAddr, "events-addr", "", "The address of notification-controller's event receiver, to forward events to as Flux's controllers do (e.g. http://notification-controller.flux-system.svc.cluster.local./).")
	fs.IntVar(&o.concurrent, "concurrent", 4, "The number of providers of one kind, and of Tenants, reconciled at once.")
	fs.DurationVar(&o.resync, "resync-interval", 10*time.Minute, "How often an unchanged provider's artifact tag is re-resolved and an unchanged Tenant looked at again, at most (spec.interval may be shorter).")
	fs.DurationVar(&o.registryTimeout, "registry-timeout", resolve.DefaultRegistryTimeout, "The longest a provider's reconcile waits for its registry (resolving the tag, fetching the artifact); a registry that does not answer in time fails that reconcile only.")
	fs.StringVar(&o.maxSize, "max-artifact-size", "64Mi", "The largest provider artifact read from a registry, compressed or unpacked.")
	fs.StringArrayVar(&o.mirrors, "registry-mirror", nil, "A FROM=TO mirror rule for artifacts, container images and release URLs (repeatable), e.g. registry.k8s.io=mirror.example.com/k8s; a TO with https:// rewrites release URLs only, e.g. github.com=https://artifacts.example.com/github; a FROM of TYPE/NAME sends that provider, without spec.source, to the OCI repository TO, e.g. infrastructure/aws=mirror.example.com/capi/manifests/infrastructure-aws.")
	fs.StringArrayVar(&o.insecure, "insecure-registry", nil, "HOST[:PORT] of a registry reached over plain HTTP, e.g. an internal mirror (repeatable); TLS verification is never switched off for HTTPS registries.")
	fs.StringVar(&o.mirrorFile, "registry-mirror-file", "", "A file of FROM=TO rules, one per line, as capwright mirror writes it.")
	fs.BoolVar(&o.catalogOCI, "catalog-oci-artifacts", false, "Install the providers Cluster API is to publish as OCI provider artifacts (core cluster-api, bootstrap and control-plane kubeadm) from registry.k8s.io/cluster-api/manifests instead of their GitHub release assets. Off until Cluster API publishes there; a --registry-mirror rule for that path switches it on for the providers it covers.")
	fs.StringArrayVar(&o.releaseRedirectHosts, "release-redirect-host", nil, "HOST[:PORT] a release host may redirect a download to, besides GitHub's own download hosts (repeatable), e.g. the storage host of an internal release mirror.")
	fs.DurationVar(&o.releaseRecheck, "release-recheck-interval", resolve.DefaultReleaseRecheck, "How often an installed release is fetched again to notice files re-uploaded under the same version; a resync in between makes no request to the release host (a reconcile request does).")
	fs.DurationVar(&o.upgradeCheck, "upgrade-check-interval", provider.DefaultUpgradeCheckInterval, "How often each installed provider's source is asked for newer versions (status.upgrades, the UpgradeAvailable condition): for an OCI repository a tag list and a manifest request per provider and check, plus the newest tag's metadata.yaml when its digest is new; for a release URL one request for the latest release, plus its metadata.yaml when new. Each provider's check comes up to a tenth of the interval late, and a reconcile request checks at once. 0 turns the checks off.")
	fs.StringVar(&o.storagePath, "artifact-storage-path", "", "The directory where the manager keeps the artifacts of providers' additional manifests for Flux to fetch; empty refuses spec.additionalManifests.")
	fs.StringVar(&o.storageAddr, "artifact-bind-address", ":9090", "The address the artifact server listens on.")
	fs.StringVar(&o.storageURL, "artifact-advertise-url", "", "The base URL kustomize-controller fetches artifacts from, e.g. http://capwright-artifacts.capwright-system.svc.cluster.local. (default: http:// and --artifact-bind-address, when that names a host).")
	fs.StringSliceVar(&o.tenantForbidden, "tenant-forbidden-namespaces", render.DefaultTenantForbiddenNamespaces,
		"Namespaces of the management cluster no Tenant may select Clusters in (spec.clusters.namespaces), comma-separated or repeated; "+
			"setting it replaces the default. A Tenant listing one is refused with reason NamespaceNotAllowed and nothing is written for its clusters. "+
			"Kubernetes' own namespaces, every other Tenant's management namespace and the manager's own namespace (RUNTIME_NAMESPACE) are refused whatever it says.")
	fs.StringVar(&o.fluxSharding, "flux-sharding", render.ShardingOff,
		"How the Flux objects written for Tenants carry Flux's shard label "+render.ShardLabel+", for Flux controllers started with --watch-label-selector: "+
			"off (no label); N, a number of shards (each cluster's objects labelled shard1 to shardN by a stable hash of the tenant and the cluster, a Tenant's own "+render.ShardLabel+" label overriding it); "+
			"or tenant-label (only Tenants labelled "+render.ShardLabel+"=<shard> are sharded, on that shard). A new shard relabels the objects; nothing is deleted.")
	o.client.BindFlags(fs)
	o.log.BindFlags(fs)
	o.leaderElection.BindFlags(fs)
	o.featureGates.BindFlags(fs)
	return fs
}

// tenantForbiddenNamespaces are the namespaces closed to Tenants
// (render.TenantForbidden) with the manager's own namespace
// (RUNTIME_NAMESPACE; none when it runs outside the cluster).
func (o *options) tenantForbiddenNamespaces(runtimeNamespace string) render.ForbiddenNamespaces {
	return render.TenantForbidden(o.tenantForbidden, runtimeNamespace)
}
