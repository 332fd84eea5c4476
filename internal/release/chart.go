package release

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"time"

	"github.com/opencontainers/go-digest"
	specs "github.com/opencontainers/image-spec/specs-go"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	kyaml "sigs.k8s.io/kustomize/kyaml/yaml"
	"sigs.k8s.io/yaml"

	"github.com/capwright/capwright/internal/artifact"
)

// maxChartSize bounds what is read of the chart directory.
const maxChartSize = 16 << 20

// chartMetadata is the part of Chart.yaml helm writes into the config
// blob, in helm's field order and with its JSON names (chart.Metadata).
type chartMetadata struct {
	Name         string            `json:"name"`
	Home         string            `json:"home,omitempty"`
	Sources      []string          `json:"sources,omitempty"`
	Version      string            `json:"version"`
	Description  string            `json:"description,omitempty"`
	Keywords     []string          `json:"keywords,omitempty"`
	Maintainers  []chartMaintainer `json:"maintainers,omitempty"`
	Icon         string            `json:"icon,omitempty"`
	APIVersion   string            `json:"apiVersion"`
	Condition    string            `json:"condition,omitempty"`
	Tags         string            `json:"tags,omitempty"`
	AppVersion   string            `json:"appVersion,omitempty"`
	Deprecated   bool              `json:"deprecated,omitempty"`
	Annotations  map[string]string `json:"annotations,omitempty"`
	KubeVersion  string            `json:"kubeVersion,omitempty"`
	Dependencies []map[string]any  `json:"dependencies,omitempty"`
	Type         string            `json:"type,omitempty"`
}

type chartMaintainer struct {
	Name  string `json:"name,omitempty"`
	Email string `json:"email,omitempty"`
	URL   string `json:"url,omitempty"`
}

// packedChart is the chart artifact's blobs.
type packedChart struct {
	config, layer, manifest []byte
	meta                    chartMetadata
}

// readChart reads every regular file of the chart directory, by path
// relative to it (slash-separated).
func readChart(dir string) (map[string][]byte, error) {
	files := map[string][]byte{}
	var total int64
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if total += int64(len(data)); total > maxChartSize {
			return fmt.Errorf("the chart holds more than %d MiB", maxChartSize>>20)
		}
		files[filepath.ToSlash(rel)] = data
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("reading the chart in %s: %w", dir, err)
	}
	for _, required := range []string{"Chart.yaml", "values.yaml"} {
		if _, ok := files[required]; !ok {
			return nil, fmt.Errorf("reading the chart in %s: no %s", dir, required)
		}
	}
	return files, nil
}

// stampChart sets the release into the chart's files, keeping comments:
// Chart.yaml version and appVersion (with the leading v, as cert-manager
// does, so the OCI tag is the chart version as Flux requires) and the
// artifacthub.io/images annotation; values.yaml image.repository and
// image.digest.
func stampChart(files map[string][]byte, version, imageRepo, imageDigest string) error {
	chart, err := kyaml.Parse(string(files["Chart.yaml"]))
	if err != nil {
		return fmt.Errorf("parsing Chart.yaml: %w", err)
	}
	images := kyaml.NewScalarRNode(fmt.Sprintf("- name: manager\n  image: %s@%s\n", imageRepo, imageDigest))
	images.YNode().Style = kyaml.LiteralStyle
	annotations, err := chart.Pipe(kyaml.LookupCreate(kyaml.MappingNode, "annotations"))
	if err != nil {
		return fmt.Errorf("setting the annotations of Chart.yaml: %w", err)
	}
	if err := annotations.PipeE(kyaml.SetField(artifact.ChartImagesAnnotation, images)); err != nil {
		return fmt.Errorf("setting the annotations of Chart.yaml: %w", err)
	}
	for _, field := range []string{"version", "appVersion"} {
		if err := setString(chart, field, version); err != nil {
			return fmt.Errorf("setting %s in Chart.yaml: %w", field, err)
		}
	}

	values, err := kyaml.Parse(string(files["values.yaml"]))
	if err != nil {
		return fmt.Errorf("parsing values.yaml: %w", err)
	}
	image, err := values.Pipe(kyaml.LookupCreate(kyaml.MappingNode, "image"))
	if err != nil {
		return fmt.Errorf("values.yaml image: %w", err)
	}
	for field, value := range map[string]string{"repository": imageRepo, "digest": imageDigest} {
		if err := setString(image, field, value); err != nil {
			return fmt.Errorf("values.yaml image.%s: %w", field, err)
		}
	}

	for name, node := range map[string]*kyaml.RNode{"Chart.yaml": chart, "values.yaml": values} {
		out, err := node.String()
		if err != nil {
			return fmt.Errorf("writing %s: %w", name, err)
		}
		files[name] = []byte(out)
	}
	return nil
}

// setString sets field of a mapping to a string: in place when it is a
// scalar already, so its comments and quoting stay, else as a new field.
func setString(m *kyaml.RNode, field, value string) error {
	if f := m.Field(field); f != nil && f.Value.YNode().Kind == kyaml.ScalarNode {
		n := f.Value.YNode()
		n.Value, n.Tag = value, kyaml.NodeTagString
		return nil
	}
	return m.PipeE(kyaml.SetField(field, kyaml.NewStringRNode(value)))
}

// packChart lays the chart out as helm push does: config = Chart.yaml as
// JSON, one layer = the chart's files under <name>/ in a tar+gzip, and
// the manifest annotations helm derives from Chart.yaml, created being the
// commit time.
func packChart(files map[string][]byte, created time.Time) (*packedChart, error) {
	var meta chartMetadata
	if err := yaml.Unmarshal(files["Chart.yaml"], &meta); err != nil {
		return nil, fmt.Errorf("reading Chart.yaml: %w", err)
	}
	if meta.Name == "" || meta.Version == "" {
		return nil, errors.New("the chart's Chart.yaml needs a name and a version")
	}
	config, err := json.Marshal(meta)
	if err != nil {
		return nil, err
	}
	entries := make(map[string][]byte, len(files))
	for name, data := range files {
		entries[path.Join(meta.Name, name)] = data
	}
	layer, err := artifact.PackTarGz(entries)
	if err != nil {
		return nil, fmt.Errorf("packing the chart: %w", err)
	}
	manifest, err := json.Marshal(ocispec.Manifest{
		Versioned: specs.Versioned{SchemaVersion: 2},
		Config:    descriptorOf(artifact.HelmConfigMediaType, config),
		Layers:    []ocispec.Descriptor{descriptorOf(artifact.HelmChartMediaType, layer)},
		// helm push writes no mediaType field, only the descriptor's.
		Annotations: helmAnnotations(meta, created),
	})
	if err != nil {
		return nil, err
	}
	return &packedChart{config: config, layer: layer, manifest: manifest, meta: meta}, nil
}

// helmAnnotations are the manifest annotations helm push sets: OCI ones
// from Chart.yaml, then the chart's own annotations, which may override
// any but the version and title.
func helmAnnotations(meta chartMetadata, created time.Time) map[string]string {
	a := map[string]string{}
	set := func(k, v string) {
		if strings.TrimSpace(v) != "" {
			a[k] = v
		}
	}
	set(ocispec.AnnotationDescription, meta.Description)
	set(ocispec.AnnotationTitle, meta.Name)
	set(ocispec.AnnotationVersion, meta.Version)
	set(ocispec.AnnotationURL, meta.Home)
	set(ocispec.AnnotationCreated, created.Format(time.RFC3339))
	if len(meta.Sources) > 0 {
		set(ocispec.AnnotationSource, meta.Sources[0])
	}
	var authors []string
	for _, m := range meta.Maintainers {
		author := m.Name
		if m.Email != "" {
			author += " (" + m.Email + ")"
		}
		authors = append(authors, strings.TrimSpace(author))
	}
	set(ocispec.AnnotationAuthors, strings.Join(authors, ", "))
	for k, v := range meta.Annotations {
		if k != ocispec.AnnotationVersion && k != ocispec.AnnotationTitle {
			a[k] = v
		}
	}
	return a
}

func descriptorOf(mediaType string, data []byte) ocispec.Descriptor {
	return ocispec.Descriptor{MediaType: mediaType, Digest: digest.FromBytes(data), Size: int64(len(data))}
}
