package main

import (
	"context"
	"fmt"
	"strings"
	"sync"

	"github.com/spf13/cobra"

	"github.com/capwright/capwright/api/providers/v1alpha1"
	"github.com/capwright/capwright/internal/artifact"
	"github.com/capwright/capwright/internal/fluxobjects"
	"github.com/capwright/capwright/internal/providerrelease"
	"github.com/capwright/capwright/internal/upgrades"
)

func init() { subcommands = append(subcommands, newUpgradeCommand) }

// upgradeListConcurrency bounds the sources read at once.
const upgradeListConcurrency = 4

func newUpgradeCommand(reg *registryOptions) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "upgrade",
		Short: "Plan provider upgrades",
	}
	cmd.AddCommand(newUpgradePlanCommand(reg))
	return cmd
}

type upgradePlanOptions struct {
	cluster clusterOptions
	release releaseOptions
	output  string
}

func newUpgradePlanCommand(reg *registryOptions) *cobra.Command {
	o := &upgradePlanOptions{}
	cmd := &cobra.Command{
		Use:   "plan",
		Short: "Show the newer versions of the installed providers, and which can be installed",
		Long: `upgrade plan reads the providers installed in the management cluster (the
seven provider kinds, every namespace) and, for each, the newer versions its
source offers, from where its status.artifact says it was installed: the
version tags of its OCI repository (mirror rules applied), or for a release
URL (GitHub, or a plain HTTPS mirror) the latest release, as the host's
link to it names it (release hosts' APIs are not asked: GitHub allows 60
requests an hour without a token). The metadata.yaml of the newest version
gives each version's release series and Cluster API contract.

The rules are clusterctl's "upgrade plan": the core provider drives the
plan. A newer version of a provider is available when its contract is one
the installed core provider works with; it is blocked with
CoreUpgradeRequired when only a newer core version works with it (upgrade
the core first), with ContractMismatch when no core version does, and a core
version with a new contract is blocked with ProvidersBehind until every
other provider has a release for it. Pre-releases are not offered.

Each line lists, per newer release series, its newest version; NEXT is the
newest version that can be installed now (a one-line change of
spec.version). The manager reports the same as the UpgradeAvailable
condition and status.upgrades of each provider.

Registries are reached with the registry flags and the docker credential
chain, release hosts with the --release-* flags (as publish --from-release),
never with the cluster's Secrets; a provider whose spec.source sets insecure
is read over plain HTTP. Providers installed from a Helm chart are listed
with a note and not checked.

Exit codes: 0 when every provider was checked (whether or not upgrades
exist), 3 when the cluster does not serve the provider kinds, and when some
source could not be read the code of its failure (3 not found, 4 refused
credentials, 5 connection or TLS), after printing the plan of the others.`,
		Example: `  capwright upgrade plan

  # The newest installable version of every provider, for a script
  capwright upgrade plan -o json | jq -r '.providers[] | select(.next) | "\(.kind)/\(.name) \(.next)"'`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return withCLIHints(runUpgradePlan(cmd, reg, o))
		},
	}
	o.cluster.addFlags(cmd, "")
	o.release.addFlags(cmd, "the provider's status.installedVersion", "the provider's spec.source.release.url")
	cmd.Flags().StringVarP(&o.output, "output", "o", "table", "output format: table, json or yaml")
	_ = cmd.RegisterFlagCompletionFunc("output", func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
		return []string{"table", "json", "yaml"}, cobra.ShellCompDirectiveNoFileComp
	})
	return cmd
}

// sourceError is why some providers' sources could not be read; its
// exit code is that of the first failure.
type sourceError struct {
	failed, total int
	first         error
}

func (e sourceError) Error() string {
	return fmt.Sprintf("%d of %d providers could not be checked; the first: %v", e.failed, e.total, e.first)
}

func (e sourceError) Unwrap() error { return e.first }

// plannedProvider is an installed provider and where its versions come from.
type plannedProvider struct {
	kind  string
	obj   v1alpha1.Provider
	where upgrades.Where
}

// upgradePlanReport is the -o json|yaml output.
type upgradePlanReport struct {
	upgrades.Plan `json:",inline"`
	// Skipped are the providers not checked: not installed yet, or a
	// source whose versions are not listed.
	Skipped []skippedProvider `json:"skipped"`
}

type skippedProvider struct {
	Kind      string `json:"kind"`
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	Reason    string `json:"reason"`
}

func runUpgradePlan(cmd *cobra.Command, reg *registryOptions, o *upgradePlanOptions) error {
	switch o.output {
	case "table", "json", "yaml":
	default:
		return usageErrorf("-o %q: choose table, json or yaml", o.output)
	}
	access, err := reg.access()
	if err != nil {
		return err
	}
	c, context, err := o.cluster.client()
	if err != nil {
		return err
	}
	ctx := cmd.Context()
	var (
		planned []plannedProvider
		report  upgradePlanReport
	)
	for _, k := range v1alpha1.Kinds() {
		list := k.NewList()
		if err := c.List(ctx, list); err != nil {
			if fluxobjects.NotServed(err) {
				return &notInstalledError{context: context, missing: []string{strings.ToLower(k.Name) + "s." + v1alpha1.GroupVersion.Group}}
			}
			return fmt.Errorf("listing the %ss of context %q: %w", k.Name, context, err)
		}
		for _, p := range list.GetItems() {
			if p.GetStatus().InstalledVersion == "" {
				report.Skipped = append(report.Skipped, skippedProvider{k.Name, p.GetNamespace(), p.GetName(), "not installed yet (no status.installedVersion)"})
				continue
			}
			w := upgrades.SourceOf(p)
			if w.Unsupported != "" {
				report.Skipped = append(report.Skipped, skippedProvider{k.Name, p.GetNamespace(), p.GetName(), w.Unsupported})
				continue
			}
			planned = append(planned, plannedProvider{kind: k.Name, obj: p, where: w})
		}
	}
	releases, err := o.release.fetcher(artifact.DefaultMaxArtifactSize)
	if err != nil {
		return err
	}
	inputs, errs := listSources(ctx, planned, access, releases)
	report.Plan = upgrades.Compute(inputs)
	if report.Skipped == nil {
		report.Skipped = []skippedProvider{}
	}
	if report.Providers == nil {
		report.Providers = []upgrades.Result{}
	}
	out := cmd.OutOrStdout()
	printed, err := printData(out, o.output, report)
	if err != nil {
		return err
	}
	if !printed {
		if err := printUpgradePlan(out, report); err != nil {
			return err
		}
	}
	var first error
	failed := 0
	for _, err := range errs {
		if err != nil {
			failed++
			if first == nil {
				first = err
			}
		}
	}
	if first != nil {
		return sourceError{failed: failed, total: len(planned), first: first}
	}
	return nil
}

// listSources reads every provider's source, a few at a time: the tags
// of an OCI repository, the latest release of a release URL.
func listSources(ctx context.Context, planned []plannedProvider, access artifact.Access, releases *providerrelease.Fetcher) ([]upgrades.Provider, []error) {
	lister := &upgrades.Lister{Fetcher: &artifact.Fetcher{}}
	inputs := make([]upgrades.Provider, len(planned))
	errs := make([]error, len(planned))
	sem := make(chan struct{}, upgradeListConcurrency)
	var wg sync.WaitGroup
	for i, p := range planned {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			var (
				listing upgrades.Listing
				err     error
				source  = p.where.OCI
			)
			src := p.obj.GetSpec().Source
			if p.where.Release != "" {
				source = p.where.Release
				f := *releases
				f.AllowPlainHTTP = f.AllowPlainHTTP || (src != nil && src.Release != nil && src.Release.Insecure)
				listing, err = lister.Release(ctx, p.where.Release, &f)
			} else {
				a := access
				a.PlainHTTP = a.PlainHTTP || (src != nil && src.OCI != nil && src.OCI.Insecure)
				listing, err = lister.OCI(ctx, p.where.OCI, a)
			}
			if err != nil {
				err = fmt.Errorf("%s %s/%s: %w", p.kind, p.obj.GetNamespace(), p.obj.GetName(), withRegistryHint(err))
			}
			inputs[i] = upgrades.Input(p.kind, p.obj, source, listing, err)
			errs[i] = err
		}()
	}
	wg.Wait()
	return inputs, errs
}

// withRegistryHint adds to a registry that cannot be reached what to do:
// upgrade plan has no offline form, the registry is the only place that
// knows which versions exist.
func withRegistryHint(err error) error {
	if !artifact.Unreachable(err) {
		return err
	}
	return fmt.Errorf("%w: the registry cannot be reached from here, and upgrade plan has no offline form (only the registry knows which versions exist): run it where the registry can be reached, or read the UpgradeAvailable condition the manager sets on each provider", err)
}
