package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/capwright/capwright/internal/build"
	"github.com/capwright/capwright/internal/catalog"
	"github.com/capwright/capwright/internal/render"
	"github.com/capwright/capwright/internal/resolve"
)

func init() { subcommands = append(subcommands, newBuildCommand) }

// managerSettings are the flags of build and diff that stand for the
// manager's own flags of the same names: what it writes depends on them.
type managerSettings struct {
	mirrors          []string
	mirrorFile       string
	insecure         []string
	catalogOCI       bool
	redirectHosts    []string
	sharding         string
	forbidden        []string
	managerNamespace string
	maxArtifactSize  string
	registryTimeout  time.Duration
}

func (m *managerSettings) addFlags(cmd *cobra.Command) {
	f := cmd.Flags()
	f.StringArrayVar(&m.mirrors, "registry-mirror", nil, "the manager's --registry-mirror FROM=TO rules (repeatable)")
	f.StringVar(&m.mirrorFile, "registry-mirror-file", "", "the manager's --registry-mirror-file, as capwright mirror --rules-file writes it")
	f.StringArrayVar(&m.insecure, "insecure-registry", nil, "the manager's --insecure-registry HOST[:PORT] (repeatable)")
	f.BoolVar(&m.catalogOCI, "catalog-oci-artifacts", false, "the manager's --catalog-oci-artifacts")
	f.StringArrayVar(&m.redirectHosts, "release-redirect-host", nil, "the manager's --release-redirect-host HOST[:PORT] (repeatable)")
	f.StringVar(&m.sharding, "flux-sharding", render.ShardingOff, "the manager's --flux-sharding: off, N or tenant-label")
	f.StringSliceVar(&m.forbidden, "tenant-forbidden-namespaces", render.DefaultTenantForbiddenNamespaces, "the manager's --tenant-forbidden-namespaces")
	f.StringVar(&m.managerNamespace, "manager-namespace", "capwright-system", "the namespace the manager runs in (closed to Tenants)")
	f.StringVar(&m.maxArtifactSize, "max-artifact-size", "64Mi", "the manager's --max-artifact-size: largest artifact or release read")
	f.DurationVar(&m.registryTimeout, "registry-timeout", resolve.DefaultRegistryTimeout, "the manager's --registry-timeout: how long a registry or release host may take per custom resource")
}

// options are the build's settings from the flags.
func (m *managerSettings) options(reg *registryOptions) (build.Options, error) {
	var o build.Options
	access, err := reg.access()
	if err != nil {
		return o, err
	}
	access.UserAgent = "capwright/" + version
	rules, err := catalog.MirrorRules(m.mirrors, m.mirrorFile)
	if err != nil {
		return o, usageErrorf("%v", err)
	}
	sharding, err := render.ParseSharding(m.sharding)
	if err != nil {
		return o, usageErrorf("--flux-sharding: %v", err)
	}
	size, err := parseArtifactSizeFlag(m.maxArtifactSize)
	if err != nil {
		return o, err
	}
	return build.Options{
		Access: access, Mirrors: rules, InsecureRegistries: m.insecure, CatalogOCIArtifacts: m.catalogOCI,
		ReleaseRedirectHosts: m.redirectHosts, MaxArtifactSize: size, RegistryTimeout: m.registryTimeout,
		Sharding: sharding, Forbidden: render.TenantForbidden(m.forbidden, m.managerNamespace),
	}, nil
}

type buildOptions struct {
	files, clusterFiles []string
	layouts             []string
	namespace           string
	output              string
	settings            managerSettings
}

func newBuildCommand(reg *registryOptions) *cobra.Command {
	o := &buildOptions{}
	cmd := &cobra.Command{
		Use:   "build -f FILE|DIR... [--cluster-file FILE|DIR...]",
		Short: "Print the Flux objects the Capwright manager would write for the custom resources in files",
		Long: `build reads Capwright's custom resources (providers, Tenants,
CapwrightControlPlanes, CapwrightClusters) as they sit in the Git repository
Flux syncs and prints the objects the Capwright manager would write for them:
OCIRepositories, ExternalArtifacts, Kustomizations, HelmReleases, and a
Tenant's namespace and RBAC. It runs the manager's own steps — each provider's
artifact resolved on its registry (or its release fetched) and checked, the
same preflight, the same plan — so what it prints is what the manager applies,
and a refusal carries the reason and message the manager would set on the
custom resource's conditions.

With --layout, a provider artifact an OCI image layout holds is read from
there instead of its registry: build then works offline.

What only a cluster knows is filled in and said on stderr: every Cluster of
--cluster-file is taken as provisioned (its control plane initialized and its
kubeconfig Secret present), every spec.dependsOn as Ready. Other objects in
the files (Namespaces, Secrets, ConfigMaps, Cluster API Clusters) are read as
the manager would read them from the cluster; objects of other tools are
skipped.

The manager's settings that change what it writes have flags of the same
names (--registry-mirror, --flux-sharding, …): give the values the manager
runs with.

Exit codes: 0 every custom resource builds; 2 the input cannot be read (not
YAML, a field the kind does not have), or a Capwright kind or version this
release does not know (named, skipped; the others are printed); 3, 4, 5 as
for the registry commands when a registry fails the build itself; 8 the API
server would refuse a custom resource (its CRD's schema or CEL rules: it is
left out, the rest built as if it were not there) or the manager would (its
objects are not printed).`,
		Example: `  # What a pull request's providers and Tenants would make the manager write
  capwright build -f clusters/management/ --cluster-file workload-clusters.yaml

  # As JSON, for a CI step
  capwright build -f infrastructure/capi/ -o json | jq -r '.items[].kind' | sort | uniq -c`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runBuild(cmd, reg, o)
		},
	}
	f := cmd.Flags()
	f.StringArrayVarP(&o.files, "filename", "f", nil, "file or directory (walked for *.yaml, *.yml, *.json) holding the custom resources (repeatable)")
	f.StringArrayVar(&o.clusterFiles, "cluster-file", nil, "file or directory of objects the cluster holds and the repository does not, e.g. Cluster API Clusters (kubectl get clusters -A -o yaml): read, not built (repeatable)")
	f.StringVarP(&o.namespace, "namespace", "n", "default", "namespace of the objects in the files that name none, as kubectl apply -n or a Flux Kustomization's targetNamespace puts them")
	f.StringVarP(&o.output, "output", "o", "yaml", "yaml or json")
	addLayoutFlag(cmd, &o.layouts)
	o.settings.addFlags(cmd)
	_ = cmd.MarkFlagRequired("filename")
	_ = cmd.RegisterFlagCompletionFunc("output", cobra.FixedCompletions([]string{"yaml", "json"}, cobra.ShellCompDirectiveNoFileComp))
	_ = cmd.MarkFlagFilename("filename", "yaml", "yml", "json")
	_ = cmd.MarkFlagFilename("cluster-file", "yaml", "yml", "json")
	return cmd
}

func runBuild(cmd *cobra.Command, reg *registryOptions, o *buildOptions) error {
	if o.output != "yaml" && o.output != "json" {
		return usageErrorf("--output %q: want yaml or json", o.output)
	}
	opts, err := o.settings.options(reg)
	if err != nil {
		return err
	}
	opts.Provisioned, opts.Layouts = true, o.layouts
	in, err := loadInput(o.files, o.clusterFiles, o.namespace)
	if err != nil {
		return err
	}
	items, err := build.Build(cmd.Context(), in.CRs, in.World, opts)
	if err != nil {
		return withOfflineHint(err)
	}
	report(cmd.ErrOrStderr(), in, items)
	if err := printObjects(cmd.OutOrStdout(), items, o.output); err != nil {
		return err
	}
	return buildOutcome(in, items)
}

// loadInput reads the files to build and the cluster's files; the
// objects naming no namespace are put into namespace.
func loadInput(files, clusterFiles []string, namespace string) (build.Loaded, error) {
	in, err := build.Load(files, false)
	if err == nil {
		var world build.Loaded
		world, err = build.Load(clusterFiles, true)
		in.World = append(in.World, world.World...)
		in.Unknown = append(in.Unknown, world.Unknown...)
		in.Ignored += world.Ignored
	}
	var input *build.InputError
	if errors.As(err, &input) {
		return in, usageError{err}
	}
	if err != nil {
		return in, err
	}
	if err := build.DefaultNamespaces(&in, namespace); err != nil {
		return in, err
	}
	if len(in.CRs) == 0 && len(in.Unknown) == 0 && len(in.Invalid) == 0 {
		return in, usageErrorf("no Capwright custom resource (providers, Tenants, CapwrightControlPlanes, CapwrightClusters) in %s", strings.Join(files, ", "))
	}
	return in, nil
}

// report writes, to stderr, what was skipped, filled in and refused.
func report(w io.Writer, in build.Loaded, items []build.Item) {
	for _, u := range in.Unknown {
		_, _ = fmt.Fprintln(w, "skipped:", u)
	}
	for _, u := range in.Invalid {
		_, _ = fmt.Fprintln(w, "invalid:", u)
	}
	if in.Ignored > 0 {
		_, _ = fmt.Fprintf(w, "note: %d objects of other kinds (kustomize files, other tools') read as the cluster's or skipped\n", in.Ignored)
	}
	for _, it := range items {
		for _, n := range it.Notes {
			_, _ = fmt.Fprintf(w, "note: %s: %s\n", it.Ref(), n)
		}
		if r := it.Refusal; r != nil {
			_, _ = fmt.Fprintf(w, "refused: %s: %s=%s %s: %s\n", it.Ref(), r.Condition, r.Status, r.Reason, r.Message)
		}
	}
}

// printObjects prints the items' objects: YAML documents, each item's
// after a comment naming it, or one JSON List.
func printObjects(w io.Writer, items []build.Item, output string) error {
	if output == "json" {
		list := map[string]any{"apiVersion": "v1", "kind": "List", "items": []any{}}
		var objs []any
		for _, it := range items {
			for _, o := range it.Objects {
				objs = append(objs, o.Object)
			}
		}
		if objs != nil {
			list["items"] = objs
		}
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(list)
	}
	for _, it := range items {
		if len(it.Objects) == 0 {
			continue
		}
		if _, err := fmt.Fprintf(w, "# %s\n", it.Ref()); err != nil {
			return err
		}
		for _, o := range it.Objects {
			if err := writeYAML(w, o); err != nil {
				return err
			}
		}
	}
	return nil
}

func writeYAML(w io.Writer, o *unstructured.Unstructured) error {
	data, err := yaml.Marshal(o.Object)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(w, "---\n%s", data)
	return err
}

// buildOutcome is the error that gives build's exit code: input it could
// not use, then refusals.
func buildOutcome(in build.Loaded, items []build.Item) error {
	if len(in.Unknown) > 0 {
		return usageErrorf("%d objects of Capwright's API groups are of kinds or versions this capwright does not know (listed above); they were skipped", len(in.Unknown))
	}
	if len(in.Invalid) > 0 {
		return notReadyError{fmt.Errorf("the API server would refuse %d of the objects (listed above, in the words of Capwright's CustomResourceDefinitions); they were left out: fix them before merging", len(in.Invalid))}
	}
	var refused []string
	for _, it := range items {
		if it.Refusal != nil {
			refused = append(refused, it.Ref())
		}
	}
	if len(refused) > 0 {
		return notReadyError{fmt.Errorf("the manager would refuse %s (reasons above); fix them before merging", strings.Join(refused, ", "))}
	}
	return nil
}

// withOfflineHint adds to a host build could not reach what to do.
func withOfflineHint(err error) error {
	var unreached *build.UnreachableError
	var input *build.InputError
	if errors.As(err, &input) {
		return usageError{err}
	}
	if !errors.As(err, &unreached) {
		return err
	}
	return fmt.Errorf("%w; build fetches and checks each provider's artifact or release where the manager would: run it where that host is reachable, "+
		"give it a mirror it can reach with --registry-mirror FROM=TO or --registry-mirror-file (capwright mirror --provider TYPE/NAME:VERSION copies a provider there and writes the rules with --rules-file), "+
		"or, offline, the provider artifacts in an OCI image layout with --layout DIR (capwright publish --from-release TYPE/NAME --version VERSION --output DIR writes one)", err)
}

// addLayoutFlag adds --layout to build or diff.
func addLayoutFlag(cmd *cobra.Command, layouts *[]string) {
	cmd.Flags().StringArrayVar(layouts, "layout", nil, "OCI image layout holding provider artifacts, read instead of their registries (repeatable): entries named by the whole reference host/repository:tag, by the digest spec.source.oci pins, or by the version with the provider's annotations (capwright publish --output)")
	_ = cmd.MarkFlagDirname("layout")
}
