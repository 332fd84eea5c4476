package main

import (
	"fmt"
	"time"

	"github.com/fluxcd/pkg/runtime/client"
	feathelper "github.com/fluxcd/pkg/runtime/features"
	"github.com/fluxcd/pkg/runtime/leaderelection"
	"github.com/fluxcd/pkg/runtime/logger"
	flag "github.com/spf13/pflag"
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
	resync                              time.Duration

	mirrorFile, maxSize                  string
	mirrors, insecure                    []string
	storagePath, storageAddr, storageURL string

	client         client.Options
	log            logger.Options
	leaderElection leaderelection.Options
	featureGates   feathelper.FeatureGates
}

// parseFlags reads the manager's command line.
func parseFlags(args []string) (*options, error) {
	o := &options{}
	fs := flag.NewFlagSet("manager", flag.ContinueOnError)
	fs.BoolVar(&o.printVersion, "version", false, "Print the version and exit.")
	fs.StringVar(&o.metricsAddr, "metrics-addr", ":8080", "The address the metrics endpoint binds to; 0 disables it.")
	fs.StringVar(&o.healthAddr, "health-addr", ":9440", "The address the health endpoint (/healthz, /readyz) binds to.")
	fs.StringVar(&o.eventsAddr, "events-addr", "", "The address of notification-controller's event receiver, to forward events to as Flux's controllers do (e.g. http://notification-controller.flux-system.svc.cluster.local./).")
	fs.IntVar(&o.concurrent, "concurrent", 4, "The number of providers of one kind, and of Tenants, reconciled at once.")
	fs.DurationVar(&o.resync, "resync-interval", 10*time.Minute, "How often an unchanged provider's artifact tag is re-resolved and an unchanged Tenant looked at again, at most (spec.interval may be shorter).")
	fs.StringVar(&o.maxSize, "max-artifact-size", "64Mi", "The largest provider artifact read from a registry, compressed or unpacked.")
	fs.StringArrayVar(&o.mirrors, "registry-mirror", nil, "A FROM=TO registry mirror rule for artifacts and container images (repeatable), e.g. registry.k8s.io=mirror.example.com/k8s.")
	fs.StringArrayVar(&o.insecure, "insecure-registry", nil, "HOST[:PORT] of a registry reached over plain HTTP, e.g. an internal mirror (repeatable); TLS verification is never switched off for HTTPS registries.")
	fs.StringVar(&o.mirrorFile, "registry-mirror-file", "", "A file of FROM=TO rules, one per line, as capwright mirror writes it.")
	fs.StringVar(&o.storagePath, "artifact-storage-path", "", "The directory where the manager keeps the artifacts of providers' additional manifests for Flux to fetch; empty refuses spec.additionalManifests.")
	fs.StringVar(&o.storageAddr, "artifact-bind-address", ":9090", "The address the artifact server listens on.")
	fs.StringVar(&o.storageURL, "artifact-advertise-url", "", "The base URL kustomize-controller fetches artifacts from, e.g. http://capwright-artifacts.capwright-system.svc.cluster.local. (default: http:// and --artifact-bind-address, when that names a host).")
	o.client.BindFlags(fs)
	o.log.BindFlags(fs)
	o.leaderElection.BindFlags(fs)
	o.featureGates.BindFlags(fs)
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if rest := fs.Args(); len(rest) > 0 {
		return nil, fmt.Errorf("unexpected arguments %q: the manager takes flags only (see --help)", rest)
	}
	if err := o.featureGates.SupportedFeatures(features); err != nil {
		return nil, fmt.Errorf("--feature-gates: %w (this version knows %d feature gates; see docs/install.md)", err, len(features))
	}
	return o, nil
}
