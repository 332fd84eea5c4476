package main

import (
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/capwright/capwright/internal/artifact"
)

func init() { subcommands = append(subcommands, newInspectCommand) }

type inspectOptions struct {
	output          string
	layout          string
	maxArtifactSize string
}

func newInspectCommand(reg *registryOptions) *cobra.Command {
	o := &inspectOptions{}
	cmd := &cobra.Command{
		Use:   "inspect (oci://REPOSITORY:TAG | oci://REPOSITORY@DIGEST | --layout DIR [TAG|DIGEST])",
		Short: "Show what a provider artifact holds: provider, contract, variables, images, CRDs",
		Long: `inspect reads a provider artifact, checks it against the provider artifact
contract as the Capwright controller does, and shows:

  - the manifest digest (what to pin) and annotations;
  - the files of its layer and their sizes;
  - the Cluster API contract of each release series of metadata.yaml, and
    of this version;
  - the clusterctl variables of the components, required or with their
    defaults;
  - the container images the components run once variables take their
    defaults (a required variable stays as ${NAME});
  - the CustomResourceDefinitions with the contracts their
    cluster.x-k8s.io/<contract> labels declare.

-o json and -o yaml print the same with stable field names, for scripts.
--layout reads an OCI image layout directory (e.g. written by publish
--output) instead of a registry; the tag may be left out when it holds one.

An artifact that is not a provider artifact fails with exit code 6 and says
what it is instead; artifacts in the one-file-per-layer layout can be
rebuilt with "capwright mirror --repack".`,
		Example: `  capwright inspect oci://registry.example.com/capi/manifests/core-cluster-api:v1.14.2

  # The images to mirror, for a script
  capwright inspect -o json oci://registry.example.com/capi/manifests/core-cluster-api:v1.14.2 | jq -r '.images[]'

  # An OCI image layout written by publish --output
  capwright inspect --layout ./layout v1.14.2`,
		RunE: func(cmd *cobra.Command, args []string) error {
			return withCLIHints(runInspect(cmd, reg, o, args))
		},
	}
	f := cmd.Flags()
	f.StringVarP(&o.output, "output", "o", "table", "output format: table, json or yaml")
	_ = cmd.RegisterFlagCompletionFunc("output", cobra.FixedCompletions([]string{"table", "json", "yaml"}, cobra.ShellCompDirectiveNoFileComp))
	f.StringVar(&o.layout, "layout", "", "read the artifact from this OCI image layout directory instead of a registry")
	f.StringVar(&o.maxArtifactSize, "max-artifact-size", "64Mi", "largest manifest, layer and unpacked layer read (a quantity: 64Mi, 1Gi), as the controller's limit")
	return cmd
}

func runInspect(cmd *cobra.Command, reg *registryOptions, o *inspectOptions, args []string) error {
	switch o.output {
	case "table", "json", "yaml":
	default:
		return usageErrorf("-o %q: choose table, json or yaml", o.output)
	}
	limit, err := parseArtifactSizeFlag(o.maxArtifactSize)
	if err != nil {
		return err
	}
	fetcher := &artifact.Fetcher{MaxArtifactSize: limit}

	var (
		fetched *artifact.Fetched
		name    string
	)
	if o.layout != "" {
		if len(args) > 1 {
			return usageErrorf("with --layout give at most one tag or digest, not %s", strings.Join(args, " "))
		}
		if !artifact.IsLayout(o.layout) {
			return usageErrorf("--layout %s is not an OCI image layout directory (it has no oci-layout file)", o.layout)
		}
		reference := ""
		if len(args) == 1 {
			reference = args[0]
		}
		fetched, err = fetcher.FetchLayout(cmd.Context(), o.layout, reference)
		var ambiguous *artifact.AmbiguousLayoutError
		if errors.As(err, &ambiguous) {
			return usageError{fmt.Errorf("%w: add the tag, e.g. capwright inspect --layout %s %s", err, o.layout, ambiguous.Tags[0])}
		}
		if err != nil {
			return err
		}
		name = artifact.LayoutName(o.layout, fetched.Digest)
		if fetched.Ref.Tag != "" {
			name = artifact.LayoutName(o.layout, fetched.Ref.Tag) + "@" + fetched.Digest
		}
	} else {
		if len(args) != 1 {
			return usageErrorf("give one artifact reference, oci://REPOSITORY:TAG or oci://REPOSITORY@DIGEST (or --layout DIR)")
		}
		ref, err := parseInspectRef(args[0])
		if err != nil {
			return err
		}
		access, err := reg.access()
		if err != nil {
			return err
		}
		if fetched, err = fetcher.Fetch(cmd.Context(), ref, access); err != nil {
			return err
		}
		pinned := ref
		pinned.Digest = fetched.Digest
		name = "oci://" + pinned.String()
	}

	report, err := artifact.Inspect(name, fetched)
	if err != nil {
		return err
	}
	out := cmd.OutOrStdout()
	if printed, err := printData(out, o.output, report); printed {
		return err
	}
	return printInspectTable(out, report)
}

// parseInspectRef parses an artifact reference; oci:// may be left out.
func parseInspectRef(arg string) (artifact.Reference, error) {
	url := arg
	if !strings.Contains(url, "://") {
		url = "oci://" + url
	}
	ref, err := artifact.ParseURL(url)
	if err != nil {
		return ref, usageErrorf("%v", err)
	}
	if ref.Tag == "" && ref.Digest == "" {
		return ref, usageErrorf("%s: give the artifact's tag (its version) or digest, e.g. %s:v1.14.2", arg, url)
	}
	return ref, nil
}

// parseArtifactSizeFlag reads --max-artifact-size.
func parseArtifactSizeFlag(value string) (int64, error) {
	size, err := resource.ParseQuantity(value)
	if err != nil || size.Value() <= 0 {
		return 0, usageErrorf("--max-artifact-size %q: want a positive quantity such as 64Mi", value)
	}
	return size.Value(), nil
}
