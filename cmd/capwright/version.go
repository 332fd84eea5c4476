package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"runtime"
	"slices"
	"strings"
	"time"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"github.com/spf13/cobra"
	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	ctrl "sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/capwright/capwright/internal/artifact"
)

func init() { subcommands = append(subcommands, newVersionCommand) }

// versionTimeout bounds the look-up of the manager: version must answer
// promptly when the cluster is not reachable.
const versionTimeout = 5 * time.Second

// managerLabels select the manager's Deployment, as manifests/manager
// and the chart (its selector labels) label it.
var managerLabels = ctrl.MatchingLabels{"app.kubernetes.io/name": "capwright", "app.kubernetes.io/component": "manager"}

// managerNamespace is where manifests/ installs the manager; the look-up
// falls back to it when listing Deployments in every namespace is
// forbidden.
const managerNamespace = "capwright-system"

// The OCI annotation a release puts on the manager image's index.
const imageVersionAnnotation = ocispec.AnnotationVersion

type versionOptions struct {
	cluster    clusterOptions
	output     string
	clientOnly bool
	// release, releaseRegistry and key: a release to report on.
	release, releaseRegistry, key string
}

// versionReport is what `capwright version` prints.
type versionReport struct {
	Client clientVersion `json:"client"`
	// Managers are the manager Deployments found (usually one).
	Managers []managerVersion `json:"managers,omitempty"`
	// ManagerNote says why no manager is shown.
	ManagerNote string `json:"managerNote,omitempty"`
	// Release is the release --release asked about.
	Release *releaseStatus `json:"release,omitempty"`
}

type clientVersion struct {
	Version   string `json:"version"`
	GoVersion string `json:"goVersion"`
	Platform  string `json:"platform"`
}

type managerVersion struct {
	Namespace  string `json:"namespace"`
	Deployment string `json:"deployment"`
	Image      string `json:"image"`
	// Version and where it was read: the Deployment's
	// app.kubernetes.io/version label (the chart sets it), the image's
	// tag, or the image's org.opencontainers.image.version annotation
	// (a release pins the image by digest).
	Version       string `json:"version,omitempty"`
	VersionSource string `json:"versionSource,omitempty"`
	Note          string `json:"note,omitempty"`
	Replicas      int32  `json:"replicas"`
	ReadyReplicas int32  `json:"readyReplicas"`
}

func newVersionCommand(reg *registryOptions) *cobra.Command {
	o := &versionOptions{}
	cmd := &cobra.Command{
		Use:   "version",
		Short: "Show the CLI's version and the manager's on the cluster",
		Long: `version prints the CLI's version, and the version of the Capwright manager
running on the cluster the kubeconfig names, when it can reach it within 5
seconds (not reaching it is not an error: the manager is left out, with a
note).

The manager is the Deployment labelled app.kubernetes.io/name=capwright and
app.kubernetes.io/component=manager, as manifests/ and the chart install it.
Its version is the Deployment's app.kubernetes.io/version label (the chart
sets it), else the image's tag, else, for an image pinned by digest as
releases pin it, the image's org.opencontainers.image.version annotation
read from its registry (with the registry flags).

--release VERSION reports on that release in --release-registry instead
of looking for the manager: each artifact (the image index and each
platform's manifest, the chart, the manifests artifact) by digest, whether
it is signed — checked against --key, the release's cosign.pub — and
where its attestations (the SBOMs and provenance) are. It exits 1 when an
artifact is unsigned, or not signed by --key (docs/security.md).`,
		Example: `  capwright version
  capwright version -o json | jq -r '.managers[0].version'
  capwright version --release v0.1.0 --key cosign.pub`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runVersion(cmd, reg, o)
		},
	}
	o.cluster.addFlags(cmd, "of the manager ")
	cmd.Flags().StringVarP(&o.output, "output", "o", "text", "output format: text, yaml or json")
	cmd.Flags().BoolVar(&o.clientOnly, "client", false, "only the CLI's version: do not look for the manager")
	cmd.Flags().StringVar(&o.release, "release", "", "report the signatures, SBOMs and provenance of this release (vX.Y.Z) in --release-registry instead of the manager")
	cmd.Flags().StringVar(&o.releaseRegistry, "release-registry", defaultReleaseRegistry, "host[/prefix] the release was published under (make release's REGISTRY)")
	cmd.Flags().StringVar(&o.key, "key", "", "cosign public key (cosign.pub) to verify the release's signatures and attestations with")
	_ = cmd.RegisterFlagCompletionFunc("output", cobra.FixedCompletions([]string{"text", "yaml", "json"}, cobra.ShellCompDirectiveNoFileComp))
	return cmd
}

func runVersion(cmd *cobra.Command, reg *registryOptions, o *versionOptions) error {
	if !slices.Contains([]string{"text", "yaml", "json"}, o.output) {
		return usageErrorf("-o %q: choose text, yaml or json", o.output)
	}
	r := versionReport{Client: clientVersion{Version: version, GoVersion: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH}}
	if o.release != "" {
		rel, err := readRelease(cmd.Context(), reg, o.releaseRegistry, o.release, o.key)
		if err != nil {
			return err
		}
		r.Release = rel
	} else if !o.clientOnly {
		r.Managers, r.ManagerNote = findManagers(cmd.Context(), reg, &o.cluster)
	}
	if err := printVersion(cmd.OutOrStdout(), o.output, &r); err != nil {
		return err
	}
	if r.Release != nil {
		for _, a := range r.Release.Artifacts {
			if a.Signatures == 0 || (o.key != "" && a.Verified == 0) {
				return fmt.Errorf("release %s: %s is %s", o.release, a.Reference, signatureText(a.CosignStatus, o.key))
			}
		}
	}
	return nil
}

// findManagers looks the manager up; what it cannot find goes in the note.
func findManagers(ctx context.Context, reg *registryOptions, o *clusterOptions) ([]managerVersion, string) {
	c, name, err := o.statusClient(versionTimeout)
	if err != nil {
		return nil, "no cluster: " + err.Error()
	}
	ctx, cancel := context.WithTimeout(ctx, versionTimeout)
	defer cancel()
	list := &appsv1.DeploymentList{}
	err = c.List(ctx, list, managerLabels)
	if apierrors.IsForbidden(err) {
		err = c.List(ctx, list, managerLabels, ctrl.InNamespace(managerNamespace))
	}
	if err != nil {
		return nil, fmt.Sprintf("context %q not reachable or not readable: %v", name, err)
	}
	if len(list.Items) == 0 {
		return nil, fmt.Sprintf("context %q: no Deployment labelled app.kubernetes.io/name=capwright,app.kubernetes.io/component=manager (Capwright not installed as manifests/ or the chart install it)", name)
	}
	var out []managerVersion
	for _, d := range list.Items {
		out = append(out, managerOf(ctx, reg, &d))
	}
	return out, ""
}

// managerOf reads a manager Deployment's image and version.
func managerOf(ctx context.Context, reg *registryOptions, d *appsv1.Deployment) managerVersion {
	m := managerVersion{Namespace: d.Namespace, Deployment: d.Name, ReadyReplicas: d.Status.ReadyReplicas, Replicas: 1}
	if d.Spec.Replicas != nil {
		m.Replicas = *d.Spec.Replicas
	}
	for _, c := range d.Spec.Template.Spec.Containers {
		if c.Name == "manager" || m.Image == "" {
			m.Image = c.Image
		}
	}
	if v := d.Labels["app.kubernetes.io/version"]; v != "" {
		m.Version, m.VersionSource = v, "label app.kubernetes.io/version"
		return m
	}
	ref, err := artifact.ParseURL("oci://" + m.Image)
	if err != nil {
		m.Note = fmt.Sprintf("image %q not understood: %v", m.Image, err)
		return m
	}
	if ref.Tag != "" && ref.Tag != "latest" {
		m.Version, m.VersionSource = ref.Tag, "image tag"
		return m
	}
	if ref.Digest == "" {
		m.Note = fmt.Sprintf("the image's tag %q does not say which version runs", ref.Tag)
		return m
	}
	v, err := imageVersion(ctx, reg, ref)
	if err != nil {
		m.Note = "version not read from the image's registry: " + err.Error()
		return m
	}
	m.Version, m.VersionSource = v, "image annotation "+imageVersionAnnotation
	return m
}

// maxImageManifest bounds the manifest or index read for its annotations.
const maxImageManifest = 4 << 20

// imageVersion reads the version annotation of an image pinned by digest.
func imageVersion(ctx context.Context, reg *registryOptions, ref artifact.Reference) (string, error) {
	access, err := reg.access()
	if err != nil {
		return "", err
	}
	repo, release, err := access.Repository(ref, maxImageManifest)
	if err != nil {
		return "", err
	}
	defer release()
	_, rc, err := repo.FetchReference(ctx, ref.Digest)
	if err != nil {
		return "", withCLIHints(artifact.RegistryError(ref, "reading the manager image", err))
	}
	defer rc.Close()
	var manifest struct {
		Annotations map[string]string `json:"annotations"`
	}
	if err := json.NewDecoder(io.LimitReader(rc, maxImageManifest)).Decode(&manifest); err != nil {
		return "", fmt.Errorf("reading the manifest of %s: %w", ref.URL(), err)
	}
	v := manifest.Annotations[imageVersionAnnotation]
	if v == "" {
		return "", fmt.Errorf("%s has no %s annotation", ref.URL(), imageVersionAnnotation)
	}
	return v, nil
}

func printVersion(w io.Writer, output string, r *versionReport) error {
	if printed, err := printData(w, output, r); printed {
		return err
	}
	fmt.Fprintf(w, "capwright CLI: %s (%s, %s)\n", r.Client.Version, r.Client.GoVersion, r.Client.Platform)
	for _, m := range r.Managers {
		v := m.Version
		if v == "" {
			v = "unknown"
		} else {
			v += " (from the " + m.VersionSource + ")"
		}
		line := fmt.Sprintf("manager: %s, Deployment %s/%s, image %s, %d/%d ready", v, m.Namespace, m.Deployment, m.Image, m.ReadyReplicas, m.Replicas)
		if m.Note != "" {
			line += "; " + m.Note
		}
		fmt.Fprintln(w, line)
	}
	if r.ManagerNote != "" {
		fmt.Fprintln(w, "manager: not shown: "+strings.TrimSpace(r.ManagerNote))
	}
	if r.Release != nil {
		printRelease(w, r.Release)
	}
	return nil
}
