package release

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	specs "github.com/opencontainers/image-spec/specs-go"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"oras.land/oras-go/v2"
	"oras.land/oras-go/v2/content"
	"oras.land/oras-go/v2/content/oci"
	"oras.land/oras-go/v2/registry/remote"
	"oras.land/oras-go/v2/registry/remote/credentials"

	"github.com/capwright/capwright/internal/artifact"
)

// maxManifestBytes bounds the manifests oras-go reads back.
const maxManifestBytes = 4 << 20

// pushAll pushes every artifact by digest, runs beforeTag (signing; nil
// for none), and only then tags them with the version: a release that
// fails half-way leaves no tag behind, so nobody pulls a partial or
// unsigned release by its version.
func pushAll(ctx context.Context, o Options, t target, src content.ReadOnlyStorage, arts []*staged, beforeTag func(context.Context) error) error {
	access, err := registryAccess(o.PlainHTTP)
	if err != nil {
		return err
	}
	repos := make([]*remote.Repository, len(arts))
	for i, a := range arts {
		ref := artifact.Reference{Host: t.host, Repository: a.path, Digest: a.artifact.Digest}
		repo, release, err := access.Repository(ref, maxManifestBytes)
		if err != nil {
			return err
		}
		defer release()
		repos[i] = repo
		o.logf("pushing the %s to %s@%s", a.what, a.artifact.Repository, a.artifact.Digest)
		if err := oras.CopyGraph(ctx, src, repo, a.desc, oras.DefaultCopyGraphOptions); err != nil {
			return fmt.Errorf("releasing %s to registry %s: pushing the %s failed; nothing was tagged %s: %w",
				o.Version, t.host, a.what, o.Version, artifact.RegistryError(ref, "pushing", err))
		}
	}
	if beforeTag != nil {
		if err := beforeTag(ctx); err != nil {
			return fmt.Errorf("releasing %s to registry %s: every artifact was pushed by digest, but nothing was tagged %s: %w", o.Version, t.host, o.Version, err)
		}
	}
	var tagged []string
	for i, a := range arts {
		o.logf("tagging %s", a.artifact.TagRef())
		if err := repos[i].PushReference(ctx, a.desc, bytes.NewReader(a.manifest), a.artifact.Tag); err != nil {
			ref := artifact.Reference{Host: t.host, Repository: a.path, Tag: a.artifact.Tag}
			done := "nothing was tagged"
			if len(tagged) > 0 {
				done = "already tagged: " + strings.Join(tagged, ", ") + "; run the release again to finish it"
			}
			return fmt.Errorf("releasing %s to registry %s: every artifact was pushed, but tagging the %s failed (%s): %w",
				o.Version, t.host, a.what, done, artifact.RegistryError(ref, "tagging", err))
		}
		tagged = append(tagged, a.artifact.TagRef())
	}
	return nil
}

// registryAccess authenticates with the docker credential chain (docker
// login, credential helpers), as the CLI does.
func registryAccess(plainHTTP bool) (artifact.Access, error) {
	store, err := credentials.NewStoreFromDocker(credentials.StoreOptions{DetectDefaultNativeStore: true})
	if err != nil {
		return artifact.Access{}, fmt.Errorf("reading registry credentials: %w", err)
	}
	return artifact.Access{
		PlainHTTP:   plainHTTP,
		Credentials: credentials.Credential(store),
		UserAgent:   "capwright-release",
	}, nil
}

// writeLayout writes every artifact into one OCI image layout at dir. Its
// index.json lists only the artifacts, each named by its full reference
// (org.opencontainers.image.ref.name = host/path:version), which is what
// the CLI's mirror copies them by.
func writeLayout(ctx context.Context, dir string, src content.ReadOnlyStorage, arts []*staged) error {
	if err := prepareLayoutDir(dir); err != nil {
		return err
	}
	store, err := oci.New(dir)
	if err != nil {
		return fmt.Errorf("creating the OCI layout %s: %w", dir, err)
	}
	index := ocispec.Index{
		Versioned: specs.Versioned{SchemaVersion: 2},
		MediaType: ocispec.MediaTypeImageIndex,
	}
	for _, a := range arts {
		if err := oras.CopyGraph(ctx, src, store, a.desc, oras.DefaultCopyGraphOptions); err != nil {
			return fmt.Errorf("writing the %s to the OCI layout %s: %w", a.what, dir, err)
		}
		desc := a.desc
		desc.Annotations = map[string]string{ocispec.AnnotationRefName: a.artifact.TagRef()}
		index.Manifests = append(index.Manifests, desc)
	}
	// The store lists every manifest it holds, the image's per-platform
	// ones too; the layout names only the released roots, in a fixed order.
	slices.SortFunc(index.Manifests, func(a, b ocispec.Descriptor) int {
		return strings.Compare(a.Annotations[ocispec.AnnotationRefName], b.Annotations[ocispec.AnnotationRefName])
	})
	data, err := json.Marshal(index)
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, ocispec.ImageIndexFile), data, 0o644); err != nil {
		return fmt.Errorf("writing the OCI layout %s: %w", dir, err)
	}
	return nil
}

// checkOutputDir accepts a missing directory, one holding at most the CLI
// (cli/), SBOMs (sbom/) and provenance, or the layout an earlier run
// wrote; it refuses any other, so a mistyped OUTPUT never clears
// unrelated files.
func checkOutputDir(dir string) error {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("output %s: %w", dir, err)
	}
	if _, err := os.Stat(filepath.Join(dir, ocispec.ImageLayoutFile)); err == nil {
		return nil
	}
	for _, e := range entries {
		if e.Name() != "cli" && e.Name() != sbomDir && e.Name() != provenanceFile {
			return fmt.Errorf("output %s is neither empty nor an OCI layout (it holds %s); give an empty or new directory", dir, e.Name())
		}
	}
	return nil
}

// prepareLayoutDir creates dir or removes the layout an earlier run wrote
// there.
func prepareLayoutDir(dir string) error {
	if err := checkOutputDir(dir); err != nil {
		return err
	}
	for _, name := range []string{ocispec.ImageBlobsDir, ocispec.ImageIndexFile, ocispec.ImageLayoutFile} {
		if err := os.RemoveAll(filepath.Join(dir, name)); err != nil {
			return fmt.Errorf("replacing the OCI layout %s: %w", dir, err)
		}
	}
	return os.MkdirAll(dir, 0o755)
}
