package main

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/term"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/capwright/capwright/internal/artifact"
	"github.com/capwright/capwright/internal/mirror"
)

func init() { subcommands = append(subcommands, newMirrorCommand) }

type mirrorOptions struct {
	to              string
	targetPlainHTTP bool
	fromFile        string
	repack          bool
	concurrency     int
	rulesFile       string
	maxArtifactSize string
	fromLayout      string
	providers       []string
	providersFile   string
	noCache         bool
	release         releaseOptions
}

func newMirrorCommand(reg *registryOptions) *cobra.Command {
	o := &mirrorOptions{}
	cmd := &cobra.Command{
		Use:   "mirror --to HOST[:PORT][/PREFIX] (REF... | --provider TYPE/NAME:VERSION... | --from-layout DIR)",
		Short: "Copy provider artifacts, Capwright's release, their container images and their signatures into another registry",
		Long: `mirror copies Cluster API provider artifacts, and Capwright's own release,
into one registry, for sites without access to the public registries. For
each artifact reference (oci://host/repository:tag or @digest) it copies:

  - the artifact, with its referrers (signatures, SBOMs) and what cosign
    keeps under its tag scheme (sha256-<hex>.sig, .att, .sbom);
  - every container image it runs, all platforms of a multi-platform image,
    with theirs.

The images an artifact runs depend on what it is:

  - a provider artifact: those of its components (after default variable
    values);
  - a Flux artifact (flux push artifact, e.g. Capwright's
    capwright-manifests): those of the pod templates of its YAML files;
  - a Helm chart (helm push, e.g. Capwright's charts/capwright): those its
    Chart.yaml annotation artifacthub.io/images lists; a chart that lists
    none is copied alone, and the output says so.

--provider TYPE/NAME:VERSION (repeatable; or --providers-file, one per line)
mirrors a provider by its name in clusterctl's list (infrastructure/aws:v2.13.0):
its release is fetched where clusterctl reads it and checked, as
publish --from-release does (the same --release-* flags; --release-mirror
FROM=TO fetches from a mirror of the release host), before anything is
copied, then pushed as the provider artifact publish makes of it, with its
images as above. In --providers-file a provider outside the list takes its
release URL after it: TYPE/NAME:VERSION URL. The core and kubeadm providers
land where mirroring registry.k8s.io/cluster-api/manifests/{type}-{name}
would put them; the others at HOST/PREFIX/manifests/{type}-{name}:VERSION,
with a rule TYPE/NAME=HOST/PREFIX/manifests/{type}-{name} in --rules-file.
With the rules file alone, the controller installs each provider from its
copy with only spec.version.

Digests are preserved. A source repository host/path lands at
HOST/PREFIX/path, e.g. registry.k8s.io/cluster-api/cluster-api-controller at
HOST/PREFIX/cluster-api/cluster-api-controller; sources that would land in
the same repository are refused before anything is copied.

Mirroring is resumable: content the target already holds is skipped, a tag
is written only once everything it references is in place, and an
artifact's tag only after its images and referrers, so an interrupted run
never looks complete; run the same command again to finish it.

A re-run on the same machine reads nothing it read before: a cache under
the user's cache directory ($XDG_CACHE_HOME/capwright/mirror) keeps what
each artifact holds, by digest, and which references a run completed at
which target. A reference completed before costs one request per tag: its
tag and its images' tags at their sources must still name the digests
recorded, and the target must still hold its tag at that digest; a moved
tag, a target that lost the copy or a record over a day old (to pick up
signatures added upstream) is read or walked again. --no-cache ignores
the cache.

--rules-file writes the registry mirror rules (FROM=TO per line) that send
every mirrored artifact, provider and image to its copy; give that file to
the Capwright controller as --registry-mirror-file.

--from-layout DIR copies an OCI image layout instead, such as the bundle
make release OUTPUT=DIR writes to carry a release into an air-gapped site:
every index.json entry named (org.opencontainers.image.ref.name) by a full
reference host[:port]/path:tag lands at HOST/PREFIX/path:tag with what it
references and its referrers, tags last. Images are not looked up: the
bundle holds them as entries of their own; an image its Flux artifact or
chart names but the bundle lacks is reported, not fatal.

Artifacts in the older one-file-per-layer layout (cluster-api-operator
publish, oras push of files) are not consumable by Flux; --repack rebuilds
them in the contract layout under the same tag (their digest changes, and
their signatures are not copied).

Source and target registries use the same registry flags and credentials;
--target-plain-http talks plain HTTP to the target only.
Exit code 1 when some references failed; with one reference, the code of
its failure (see capwright --help). A --provider whose release cannot be
fetched or checked stops the run first, with the exit codes of
publish --from-release.`,
		Example: `  # Mirror the providers a site runs by catalog name, from their releases,
  # with their images
  capwright mirror --to mirror.example.com:5000/capi \
    --rules-file mirror-rules.txt \
    --provider core/cluster-api:v1.14.2 \
    --provider bootstrap/kubeadm:v1.14.2 \
    --provider control-plane/kubeadm:v1.14.2 \
    --provider infrastructure/aws:v2.13.0

  # The same from a file (TYPE/NAME:VERSION [RELEASE-URL] per line), the
  # releases fetched from an internal mirror of github.com
  capwright mirror --to mirror.example.com:5000/capi --rules-file mirror-rules.txt \
    --providers-file providers.txt \
    --release-mirror github.com=https://artifacts.example.com/github

  # Mirror provider artifacts already on a registry, with their images
  capwright mirror --to mirror.example.com:5000/capi \
    --rules-file mirror-rules.txt \
    oci://registry.example.com/capi/manifests/infrastructure-in-house:v0.3.0

  # Capwright's release in the same run as the providers: its Flux
  # artifact, its chart and the manager image both name
  capwright mirror --to mirror.example.com:5000/capi \
    --rules-file mirror-rules.txt \
    --provider core/cluster-api:v1.14.2 \
    oci://ghcr.io/capwright/capwright-manifests:v0.1.0 \
    oci://ghcr.io/capwright/charts/capwright:v0.1.0

  # References from a file, one per line (# comments)
  capwright mirror --to mirror.example.com:5000/capi --from-file providers.txt

  # A release bundle carried into an air-gapped site (make release OUTPUT=dir)
  capwright mirror --to mirror.example.com:5000/capi --from-layout dir`,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runMirror(cmd, reg, o, args)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.to, "to", "", "target registry and optional path prefix, HOST[:PORT][/PREFIX] (required)")
	f.BoolVar(&o.targetPlainHTTP, "target-plain-http", false, "talk plain HTTP to the target registry only (an internal registry without TLS), HTTPS to the sources")
	f.StringVar(&o.fromFile, "from-file", "", "file of artifact references, one per line; blank lines and # comments are ignored (- for stdin)")
	f.BoolVar(&o.repack, "repack", false, "rebuild artifacts in the one-file-per-layer layout in the provider artifact contract layout (new digest)")
	f.IntVar(&o.concurrency, "concurrency", mirror.DefaultConcurrency, fmt.Sprintf("blob transfers in flight at once; the small requests around them (HEAD, manifests, referrers, tags) up to %d times as many", mirror.MetadataRequestsPerTransfer))
	f.StringVar(&o.rulesFile, "rules-file", "", "write the registry mirror rules to this file, for the controller's --registry-mirror-file")
	f.StringVar(&o.maxArtifactSize, "max-artifact-size", "64Mi", "largest provider artifact, Flux artifact or chart read, compressed or unpacked (a quantity: 64Mi, 1Gi)")
	f.StringVar(&o.fromLayout, "from-layout", "", "copy the entries of this OCI image layout (make release OUTPUT=dir) named by full references, instead of REF arguments")
	f.StringArrayVar(&o.providers, "provider", nil, "fetch the release of a provider of clusterctl's list, TYPE/NAME:VERSION (e.g. infrastructure/aws:v2.13.0), and push it as a provider artifact with its images (repeatable)")
	f.StringVar(&o.providersFile, "providers-file", "", "file of providers, one TYPE/NAME:VERSION per line, optionally followed by the release URL of a provider outside clusterctl's list; blank lines and # comments are ignored (- for stdin)")
	f.BoolVar(&o.noCache, "no-cache", false, "read every artifact and walk every reference again, ignoring and not updating the cache of earlier runs")
	o.release.addFlags(cmd, "the VERSION of TYPE/NAME:VERSION", "the release URL of --providers-file")
	return cmd
}

func runMirror(cmd *cobra.Command, reg *registryOptions, o *mirrorOptions, args []string) error {
	opts, refs, specs, err := o.options(cmd, reg, args)
	if err != nil {
		return err
	}
	releases, err := o.fetchReleases(cmd, specs, opts.MaxArtifactSize)
	if err != nil {
		return err
	}
	progress := newMirrorProgress(cmd.ErrOrStderr())
	progress.layout = o.fromLayout != ""
	opts.Progress = progress
	var summary *mirror.Summary
	var runErr error
	if o.fromLayout != "" {
		summary, runErr = mirror.RunLayout(cmd.Context(), o.fromLayout, opts)
	} else {
		summary, runErr = mirror.RunWithReleases(cmd.Context(), refs, releases, opts)
	}
	progress.finish()

	var conflict *mirror.ConflictError
	var bundle *mirror.BundleError
	if errors.As(runErr, &conflict) || errors.As(runErr, &bundle) {
		return usageError{runErr}
	}
	printSummary(cmd.OutOrStdout(), summary)
	if o.rulesFile != "" && len(summary.Failed()) < len(summary.Results) {
		if err := writeRulesFile(o.rulesFile, summary); err != nil {
			return err
		}
		fmt.Fprintf(cmd.OutOrStdout(), "Mirror rules written to %s: give it to the controller as --registry-mirror-file.\n", o.rulesFile)
	}
	if artifact.AnswersPlainHTTP(runErr) {
		runErr = fmt.Errorf("%w: a registry speaks plain HTTP, without TLS: pass --target-plain-http if it is the target, --plain-http if the sources are too", runErr)
	}
	if runErr != nil && len(summary.Results) > 1 {
		// Several references failing for different reasons have no one
		// specific exit code.
		return errors.New(runErr.Error())
	}
	return runErr
}

// options turns the command line into the engine's options, the
// artifact references and the providers whose releases to fetch.
func (o *mirrorOptions) options(cmd *cobra.Command, reg *registryOptions, args []string) (mirror.Options, []artifact.Reference, []providerSpec, error) {
	var opts mirror.Options
	if o.to == "" {
		return opts, nil, nil, usageErrorf("--to is required: the target registry, HOST[:PORT][/PREFIX]")
	}
	target, err := mirror.ParseTarget(o.to)
	if err != nil {
		return opts, nil, nil, usageErrorf("--to: %v", err)
	}
	if o.concurrency < 1 {
		return opts, nil, nil, usageErrorf("--concurrency must be at least 1, not %d", o.concurrency)
	}
	size, err := resource.ParseQuantity(o.maxArtifactSize)
	if err != nil || size.Value() <= 0 {
		return opts, nil, nil, usageErrorf("--max-artifact-size %q: want a positive quantity such as 64Mi", o.maxArtifactSize)
	}
	if o.fromLayout != "" && (len(args) > 0 || o.fromFile != "" || len(o.providers) > 0 || o.providersFile != "") {
		return opts, nil, nil, usageErrorf("--from-layout copies an OCI image layout: give no references, --from-file, --provider or --providers-file with it (run mirror once per source)")
	}
	if o.fromFile == "-" && o.providersFile == "-" {
		return opts, nil, nil, usageErrorf("--from-file and --providers-file cannot both read stdin (-): give one of them a file")
	}
	specs, err := o.providerSpecs(cmd)
	if err != nil {
		return opts, nil, nil, err
	}
	lines := args
	if o.fromFile != "" {
		fromFile, err := readRefFile(cmd.InOrStdin(), o.fromFile)
		if err != nil {
			return opts, nil, nil, err
		}
		lines = append(lines, fromFile...)
	}
	if len(lines) == 0 && len(specs) == 0 && o.fromLayout == "" {
		return opts, nil, nil, usageErrorf("nothing to mirror: give references (oci://host/repository:tag) as arguments or with --from-file, providers by name with --provider TYPE/NAME:VERSION or --providers-file, or an OCI image layout with --from-layout")
	}
	refs := make([]artifact.Reference, 0, len(lines))
	for _, line := range lines {
		url := line
		if !strings.Contains(url, "://") {
			url = "oci://" + url
		}
		ref, err := artifact.ParseURL(url)
		if err != nil {
			return opts, nil, nil, usageErrorf("%v", err)
		}
		if ref.Tag == "" && ref.Digest == "" {
			return opts, nil, nil, usageErrorf("%s: give the artifact's tag (its version) or digest", line)
		}
		refs = append(refs, ref)
	}
	access, err := reg.access()
	if err != nil {
		return opts, nil, nil, err
	}
	targetAccess := access
	targetAccess.PlainHTTP = access.PlainHTTP || o.targetPlainHTTP
	var cache *mirror.Cache
	if !o.noCache {
		// Without a cache directory (no HOME), every run reads and walks
		// everything, as with --no-cache.
		if dir, err := mirror.DefaultCacheDir(); err == nil {
			cache = mirror.NewCache(dir)
		}
	}
	return mirror.Options{
		Target:          target,
		SourceAccess:    access,
		TargetAccess:    targetAccess,
		Concurrency:     o.concurrency,
		Repack:          o.repack,
		MaxArtifactSize: size.Value(),
		Cache:           cache,
	}, refs, specs, nil
}

// readInput reads the file a flag names; "-" is stdin.
func readInput(stdin io.Reader, flag, path string) ([]byte, error) {
	var data []byte
	var err error
	if path == "-" {
		data, err = io.ReadAll(io.LimitReader(stdin, 16<<20))
	} else {
		data, err = os.ReadFile(path)
	}
	if err != nil {
		return nil, usageErrorf("%s: %v", flag, err)
	}
	return data, nil
}

// readRefFile reads references, one per line, skipping blank lines and #
// comments; "-" is stdin.
func readRefFile(stdin io.Reader, path string) ([]string, error) {
	data, err := readInput(stdin, "--from-file", path)
	if err != nil {
		return nil, err
	}
	var refs []string
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line != "" && !strings.HasPrefix(line, "#") {
			refs = append(refs, line)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, usageErrorf("--from-file %s: %v", path, err)
	}
	return refs, nil
}

// writeRulesFile replaces path with the rules of the run, atomically.
func writeRulesFile(path string, summary *mirror.Summary) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return fmt.Errorf("writing the mirror rules: %w", err)
	}
	defer os.Remove(tmp.Name())
	if err := mirror.WriteRules(tmp, summary, time.Now()); err != nil {
		tmp.Close()
		return fmt.Errorf("writing the mirror rules to %s: %w", path, err)
	}
	if err := tmp.Chmod(0o644); err != nil {
		tmp.Close()
		return fmt.Errorf("writing the mirror rules to %s: %w", path, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("writing the mirror rules to %s: %w", path, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("writing the mirror rules to %s: %w", path, err)
	}
	return nil
}

func printSummary(w io.Writer, s *mirror.Summary) {
	fmt.Fprintf(w, "Mirrored %d of %d artifact(s) to %s\n", len(s.Results)-len(s.Failed()), len(s.Results), s.Target)
	fmt.Fprintf(w, "  artifacts: %d copied, %d already present, %d failed\n", s.Artifacts.Copied, s.Artifacts.Skipped, s.Artifacts.Failed)
	fmt.Fprintf(w, "  images:    %d copied, %d already present, %d failed\n", s.Images.Copied, s.Images.Skipped, s.Images.Failed)
	fmt.Fprintf(w, "  blobs:     %d copied (%s), %d mounted, %d already present (%s), %d failed\n",
		s.Blobs.Copied, humanSize(s.Blobs.BytesCopied), s.Blobs.Mounted, s.Blobs.Skipped, humanSize(s.Blobs.BytesSkipped), s.Blobs.Failed)
	for _, r := range s.Results {
		kind := ""
		if r.Kind != "" && r.Kind != mirror.KindProvider {
			kind = fmt.Sprintf(" (%s)", r.Kind)
		}
		if r.Release != "" {
			kind = " (from the release " + r.Release + ")"
		}
		switch {
		case r.Err != nil:
			fmt.Fprintf(w, "  FAILED %s%s: %v\n", r.Name(), kind, r.Err)
		case r.Repacked:
			fmt.Fprintf(w, "  %s -> %s (repacked: digest %s became %s)\n", r.Name(), r.Target.URL()+refSuffix(r.Target), r.SourceDigest, r.Digest)
		case r.Cached:
			fmt.Fprintf(w, "  %s -> %s%s (unchanged since the last complete run: tags checked, content not walked)\n", r.Name(), r.Target.URL()+refSuffix(r.Target), kind)
		default:
			fmt.Fprintf(w, "  %s -> %s%s\n", r.Name(), r.Target.URL()+refSuffix(r.Target), kind)
		}
		for _, note := range r.Notes {
			fmt.Fprintf(w, "    note: %s\n", note)
		}
	}
}

// refSuffix is ":tag" and/or "@digest".
func refSuffix(r artifact.Reference) string {
	return strings.TrimPrefix(r.String(), r.Host+"/"+r.Repository)
}

// mirrorProgress shows a run on stderr: on a terminal one line redrawn in
// place under the finished references, otherwise one plain line per
// reference and image, for logs.
type mirrorProgress struct {
	mu       sync.Mutex
	w        io.Writer
	terminal bool
	// layout: the images of a layout bundle are entries of their own, not
	// counted per artifact.
	layout bool
	last   time.Time
	drawn  bool

	refs, refsDone, images, imagesDone int
	copied, present                    int64
}

func newMirrorProgress(w io.Writer) *mirrorProgress {
	f, ok := w.(*os.File)
	return &mirrorProgress{w: w, terminal: ok && term.IsTerminal(int(f.Fd()))}
}

// Event implements mirror.Progress.
func (p *mirrorProgress) Event(e mirror.Event) {
	p.mu.Lock()
	defer p.mu.Unlock()
	var line string
	switch e.Kind {
	case mirror.RefStarted:
		p.refs++
		line = "reading " + e.Ref
	case mirror.RefPlanned:
		p.images += e.Images
		line = fmt.Sprintf("%s: %s, %d image(s)", e.Ref, e.ArtifactKind, e.Images)
		if p.layout {
			// An entry of an OCI layout: the images it names are entries
			// of their own.
			line = fmt.Sprintf("%s: %s", e.Ref, e.ArtifactKind)
		}
		if e.ArtifactKind == mirror.KindImage {
			p.images++
		}
		for _, note := range e.Notes {
			line += "\n  note: " + note
		}
	case mirror.Repacked:
		line = fmt.Sprintf("%s: repacked in the contract layout, digest %s becomes %s", e.Ref, e.SourceDigest, e.Digest)
	case mirror.BlobCopied:
		p.copied += e.Size
	case mirror.BlobSkipped:
		p.present += e.Size
	case mirror.ImageDone:
		p.imagesDone++
		line = "image " + e.Subject + ": " + outcome(e)
	case mirror.RefDone:
		p.refsDone++
		if e.ArtifactKind == mirror.KindImage {
			p.imagesDone++
		}
		line = fmt.Sprintf("mirrored %s to %s@%s (%s)", e.Ref, e.Repository, e.Digest, outcome(e))
	case mirror.RefFailed:
		p.refsDone++
		if e.ArtifactKind == mirror.KindImage {
			p.imagesDone++
		}
		line = fmt.Sprintf("FAILED %s: %v", e.Ref, e.Err)
	}
	if !p.terminal {
		if line != "" {
			fmt.Fprintln(p.w, line)
		}
		return
	}
	important := e.Kind == mirror.RefDone || e.Kind == mirror.RefFailed || e.Kind == mirror.Repacked
	if important {
		p.clear()
		fmt.Fprintln(p.w, line)
	}
	if important || time.Since(p.last) > 100*time.Millisecond {
		p.draw()
	}
}

func outcome(e mirror.Event) string {
	switch {
	case e.Err != nil:
		return "FAILED: " + e.Err.Error()
	case e.Skipped:
		return "already present"
	}
	return "copied"
}

func (p *mirrorProgress) clear() {
	if p.drawn {
		fmt.Fprintf(p.w, "\r\033[K")
		p.drawn = false
	}
}

// draw redraws the progress line: a bar of images done, then counts.
func (p *mirrorProgress) draw() {
	const width = 24
	filled := 0
	if p.images > 0 {
		filled = width * p.imagesDone / p.images
	}
	bar := strings.Repeat("=", filled) + strings.Repeat(" ", width-filled)
	fmt.Fprintf(p.w, "\r\033[K[%s] %d/%d images · %d/%d artifacts · %s copied · %s already present",
		bar, p.imagesDone, p.images, p.refsDone, p.refs, humanSize(p.copied), humanSize(p.present))
	p.drawn = true
	p.last = time.Now()
}

// finish ends the progress line.
func (p *mirrorProgress) finish() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.terminal && p.drawn {
		p.draw()
		fmt.Fprintln(p.w)
		p.drawn = false
	}
}

var _ mirror.Progress = (*mirrorProgress)(nil)
