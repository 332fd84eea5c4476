package main

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/capwright/capwright/internal/artifact"
	"github.com/capwright/capwright/internal/providerrelease"
)

func init() { subcommands = append(subcommands, newPublishCommand) }

type publishOptions struct {
	providerType    string
	name            string
	version         string
	source          string
	annotations     []string
	output          string
	maxArtifactSize string
	fromRelease     string
	release         releaseOptions
}

func newPublishCommand(reg *registryOptions) *cobra.Command {
	o := &publishOptions{}
	cmd := &cobra.Command{
		Use:   "publish (DIR|FILE... --type TYPE --name NAME | --from-release URL|TYPE/NAME) --version VERSION (oci://REPOSITORY | --output DIR)",
		Short: "Publish a provider release as a provider artifact on an OCI registry",
		Long: `publish packs a Cluster API provider release into the provider artifact
layout (one tar+gzip layer holding metadata.yaml, {type}-components.yaml and
optional cluster-template*.yaml at its root; manifest annotations naming the
provider and version) and pushes it to REPOSITORY, tagged with the version.

The files come from DIR (its regular files; subdirectories and symlinks are
refused) or are given one by one. Before anything is written publish checks
that metadata.yaml maps the version to a Cluster API contract, that the
components file is named for the provider type and can be parsed, and that
--annotation does not contradict the provider flags.

With --from-release the release is fetched instead, as clusterctl reads it:
a release URL (https://github.com/{owner}/{repo}/releases/{latest|TAG}/{file},
a GitLab generic package https://{host}/api/v4/projects/{project}/packages/generic/{package}/{latest|TAG}/{file},
or an HTTPS base URL serving {TAG}/metadata.yaml and {TAG}/{type}-components.yaml),
or TYPE/NAME of clusterctl's well-known providers (infrastructure/aws). Exactly
metadata.yaml and the components file of --version are fetched ("latest" is
never resolved), redirects are followed only to github.com's download hosts
and --release-redirect-host, credentials (--release-token-env, or
--release-username with --release-password-env) go to the URL's own host
only, and the files are checked as local files are. --type and --name come
from TYPE/NAME, or from the URL when clusterctl knows it; --source defaults to
the release's project.

The artifact is reproducible: the same files, flags and annotations give the
same digest, whatever the files' order, times or owners, or whether they were
fetched with --from-release or read from a directory.

The digest reference (oci://REPOSITORY:VERSION@sha256:…) is printed on
stdout, everything else on stderr. With --output the artifact goes into an
OCI image layout directory instead of a registry (for signing, scanning or
copying later with oras); then DIR:VERSION@sha256:… is printed.`,
		Example: `  # Publish the Cluster API core provider from a directory holding
  # metadata.yaml and core-components.yaml
  capwright publish ./out --type core --name cluster-api --version v1.14.2 \
    --source https://github.com/kubernetes-sigs/cluster-api \
    oci://registry.example.com/capi/manifests/core-cluster-api

  # Publish files given one by one, into an OCI image layout
  capwright publish metadata.yaml infrastructure-components.yaml cluster-template.yaml \
    --type infrastructure --name docker --version v1.14.2 --output ./layout

  # Fetch a well-known provider's release, as clusterctl init --infrastructure aws does
  capwright publish --from-release infrastructure/aws --version v2.13.0 \
    oci://registry.example.com/capi/manifests/infrastructure-aws

  # Fetch from a GitLab generic package with a token from the environment
  capwright publish --version v0.3.0 --name example --release-token-env GITLAB_TOKEN \
    --from-release https://gitlab.example.com/api/v4/projects/infra%2Fcapx/packages/generic/capx/latest/infrastructure-components.yaml \
    oci://registry.example.com/capi/manifests/infrastructure-example`,
		RunE: func(cmd *cobra.Command, args []string) error {
			return withCLIHints(runPublish(cmd, reg, o, args))
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.providerType, "type", "", "provider type: core, bootstrap, control-plane, infrastructure, ipam, runtime-extension or addon (required)")
	f.StringVar(&o.name, "name", "", "provider name, e.g. cluster-api, kubeadm, aws (required)")
	f.StringVar(&o.version, "version", "", "release version, vMAJOR.MINOR.PATCH; also the tag (required)")
	f.StringVar(&o.source, "source", "", "where the release comes from, e.g. the project's repository URL (annotation "+artifact.AnnotationSource+")")
	f.StringArrayVar(&o.annotations, "annotation", nil, "extra manifest annotation key=value (repeatable)")
	f.StringVar(&o.output, "output", "", "write the artifact into this OCI image layout directory instead of pushing it")
	f.StringVar(&o.maxArtifactSize, "max-artifact-size", "64Mi", "refuse release files adding up to more than this (the controller's default limit is 64Mi)")
	o.addFromReleaseFlag(cmd)
	return cmd
}

func runPublish(cmd *cobra.Command, reg *registryOptions, o *publishOptions, args []string) error {
	var src providerrelease.Source
	if o.fromRelease != "" {
		var err error
		if src, err = o.resolve(); err != nil {
			return err
		}
	}
	paths, repo, err := o.target(args)
	if err != nil {
		return err
	}
	limit, err := parseArtifactSizeFlag(o.maxArtifactSize)
	if err != nil {
		return err
	}
	annotations, err := parseAnnotationFlags(o.annotations)
	if err != nil {
		return err
	}
	var files map[string][]byte
	if o.fromRelease != "" {
		files, err = fetchPublished(cmd, o, src, limit)
	} else {
		files, err = artifact.ReadReleaseFiles(paths, limit)
	}
	if err != nil {
		return err
	}
	release := &artifact.Release{
		Type: o.providerType, Name: o.name, Version: o.version, Source: o.source,
		Annotations: annotations, Files: files,
	}
	prepared, err := release.Prepare(cmd.Context())
	if err != nil {
		return err
	}
	contract := prepared.Contract
	stderr := cmd.ErrOrStderr()

	var published string
	if o.output != "" {
		digest, err := prepared.WriteLayout(cmd.Context(), o.output)
		if err != nil {
			return err
		}
		published = artifact.LayoutName(o.output, o.version) + "@" + digest
		fmt.Fprintf(stderr, "Wrote %s provider %s %s (contract %s) into the OCI image layout %s\n", o.providerType, o.name, o.version, contract, o.output)
	} else {
		if note := release.RepositoryNote(repo); note != "" {
			fmt.Fprintf(stderr, "Note: %s.\n", note)
		}
		access, err := reg.access()
		if err != nil {
			return err
		}
		digest, err := prepared.Push(cmd.Context(), repo, access)
		if err != nil {
			return err
		}
		repo.Tag = o.version
		repo.Digest = digest
		published = "oci://" + repo.String()
		fmt.Fprintf(stderr, "Published %s provider %s %s (contract %s) to %s:%s\n", o.providerType, o.name, o.version, contract, repo.URL(), o.version)
	}
	for _, name := range slices.Sorted(maps.Keys(files)) {
		fmt.Fprintf(stderr, "  %-32s %s\n", name, humanSize(int64(len(files[name]))))
	}
	fmt.Fprintln(cmd.OutOrStdout(), published)
	return nil
}

// target splits the arguments into release paths and the repository, and
// checks that exactly one of a repository and --output is given.
func (o *publishOptions) target(args []string) ([]string, artifact.Reference, error) {
	var paths, repos []string
	for _, arg := range args {
		if strings.HasPrefix(arg, "oci://") {
			repos = append(repos, arg)
		} else {
			paths = append(paths, arg)
		}
	}
	for _, required := range []struct{ flag, value string }{{"--type", o.providerType}, {"--name", o.name}, {"--version", o.version}} {
		if required.value == "" {
			return nil, artifact.Reference{}, usageErrorf("%s is required", required.flag)
		}
	}
	switch {
	case len(repos) > 1:
		return nil, artifact.Reference{}, usageErrorf("several repositories given (%s): publish pushes to one", strings.Join(repos, ", "))
	case len(repos) == 1 && o.output != "":
		return nil, artifact.Reference{}, usageErrorf("give either a repository (%s) or --output, not both", repos[0])
	case len(repos) == 0 && o.output == "":
		return nil, artifact.Reference{}, usageErrorf("no repository given: add oci://REGISTRY/PROJECT/manifests/%s-%s, or --output DIR for an OCI image layout", o.providerType, o.name)
	case len(paths) > 0 && o.fromRelease != "":
		return nil, artifact.Reference{}, usageErrorf("give either release files (%s) or --from-release, not both", strings.Join(paths, ", "))
	case len(paths) == 0 && o.fromRelease == "":
		return nil, artifact.Reference{}, usageErrorf("no release files given: add the release directory, or metadata.yaml and the components file, or fetch the release with --from-release URL|TYPE/NAME")
	}
	if o.output != "" {
		return paths, artifact.Reference{}, nil
	}
	ref, err := artifact.ParseURL(repos[0])
	if err != nil {
		return nil, artifact.Reference{}, usageErrorf("%v", err)
	}
	switch {
	case ref.Digest != "":
		return nil, artifact.Reference{}, usageErrorf("%s: give the repository without a digest: the digest follows from the content", repos[0])
	case ref.Tag != "" && ref.Tag != o.version:
		return nil, artifact.Reference{}, usageErrorf("%s: give the repository without a tag: the tag is the version (--version %s)", repos[0], o.version)
	}
	return paths, ref, nil
}

// parseAnnotationFlags reads repeated --annotation key=value flags.
func parseAnnotationFlags(flags []string) (map[string]string, error) {
	annotations := map[string]string{}
	for _, kv := range flags {
		key, value, ok := strings.Cut(kv, "=")
		key = strings.TrimSpace(key)
		if !ok || key == "" {
			return nil, usageErrorf("--annotation %q: give key=value, e.g. --annotation org.opencontainers.image.licenses=Apache-2.0", kv)
		}
		if previous, dup := annotations[key]; dup && previous != value {
			return nil, usageErrorf("--annotation %s is given twice, as %q and %q: give it once", key, previous, value)
		}
		annotations[key] = value
	}
	return annotations, nil
}
