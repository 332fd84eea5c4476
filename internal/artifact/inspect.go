package artifact

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/Masterminds/semver/v3"

	"github.com/capwright/capwright/internal/clusterctl"
)

// ArtifactReport is what a provider artifact holds, as `capwright inspect`
// shows it. The JSON field names are stable for scripts; slices are never
// null.
type ArtifactReport struct {
	// Artifact names what was read: oci://host/repository:tag@digest, or
	// dir:tag for an OCI image layout.
	Artifact string `json:"artifact"`
	// Digest of the manifest.
	Digest   string         `json:"digest"`
	Provider ReportProvider `json:"provider"`
	// Contract is the Cluster API contract of this version, from
	// metadata.yaml; "" when the version is unknown.
	Contract       string            `json:"contract,omitempty"`
	Annotations    map[string]string `json:"annotations"`
	Files          []ReportFile      `json:"files"`
	ComponentsFile string            `json:"componentsFile"`
	ReleaseSeries  []ReportSeries    `json:"releaseSeries"`
	Variables      []ReportVariable  `json:"variables"`
	// Images the components run once variables take their defaults; a
	// variable without a default stays as ${NAME}.
	Images []string    `json:"images"`
	CRDs   []ReportCRD `json:"crds"`
}

// ReportProvider is the provider and version the artifact holds, from its
// annotations, else its files, repository and tag.
type ReportProvider struct {
	Type    string `json:"type"`
	Name    string `json:"name,omitempty"`
	Version string `json:"version,omitempty"`
	Source  string `json:"source,omitempty"`
}

// ReportFile is one file of the layer.
type ReportFile struct {
	Name string `json:"name"`
	Size int64  `json:"size"`
}

// ReportSeries is one release series of metadata.yaml.
type ReportSeries struct {
	Major    int32  `json:"major"`
	Minor    int32  `json:"minor"`
	Contract string `json:"contract"`
	// Current marks the series of the artifact's version.
	Current bool `json:"current"`
}

// ReportVariable is a clusterctl variable of the components.
type ReportVariable struct {
	Name string `json:"name"`
	// Required variables have no default: they must be given a value.
	Required bool `json:"required"`
	// Default is the value used when the variable is not given (only
	// when not Required; it may be "").
	Default string `json:"default,omitempty"`
}

// ReportCRD is one CustomResourceDefinition of the components.
type ReportCRD struct {
	Name     string   `json:"name"`
	Group    string   `json:"group"`
	Kind     string   `json:"kind"`
	Versions []string `json:"versions"`
	// Contracts maps each Cluster API contract of the CRD's
	// cluster.x-k8s.io/<contract> labels to the API versions that
	// implement it.
	Contracts map[string][]string `json:"contracts"`
}

// Inspect reports what the fetched provider artifact f holds; name names
// it (see ArtifactReport.Artifact). It checks the artifact against the
// contract as the controller would: errors are *LayoutError, naming it.
func Inspect(name string, f *Fetched) (*ArtifactReport, error) {
	report, err := inspect(name, f)
	if err != nil {
		return nil, renamed(err, name)
	}
	return report, nil
}

func inspect(name string, f *Fetched) (*ArtifactReport, error) {
	provider, err := identifyProvider(f)
	if err != nil {
		return nil, err
	}
	checked, err := CheckProviderArtifact(f, provider.Type, provider.Name, provider.Version)
	if err != nil {
		return nil, err
	}
	contractErr := func(format string, args ...any) error {
		return &LayoutError{Ref: name, Problem: fmt.Sprintf(format, args...)}
	}

	report := &ArtifactReport{
		Artifact:       name,
		Digest:         f.Digest,
		Provider:       provider,
		Annotations:    maps.Clone(f.Annotations),
		Files:          []ReportFile{},
		ComponentsFile: checked.ComponentsFile,
		ReleaseSeries:  []ReportSeries{},
		Variables:      []ReportVariable{},
		Images:         []string{},
	}
	if report.Annotations == nil {
		report.Annotations = map[string]string{}
	}
	for _, file := range slices.Sorted(maps.Keys(f.Files)) {
		report.Files = append(report.Files, ReportFile{Name: file, Size: int64(len(f.Files[file]))})
	}

	metadata, err := clusterctl.ParseMetadata(checked.Metadata)
	if err != nil {
		return nil, contractErr("its %v", err)
	}
	if provider.Version != "" {
		if report.Contract, err = metadata.ContractFor(provider.Version); err != nil {
			return nil, contractErr("its %v", err)
		}
	}
	version, _ := semver.NewVersion(provider.Version)
	for _, s := range metadata.ReleaseSeries {
		current := report.Contract != "" && version != nil && uint64(s.Major) == version.Major() && uint64(s.Minor) == version.Minor()
		report.ReleaseSeries = append(report.ReleaseSeries, ReportSeries{Major: s.Major, Minor: s.Minor, Contract: s.Contract, Current: current})
	}

	// Decoded once: the variables, images and CRDs are questions about
	// the same objects, and decoding is most of inspect's time.
	components, err := clusterctl.Decode(checked.Components)
	if err != nil {
		return nil, contractErr("its %s cannot be read: %v", checked.ComponentsFile, err)
	}
	vars, err := components.Variables()
	if err != nil {
		return nil, contractErr("its %s cannot be read: %v", checked.ComponentsFile, err)
	}
	required := map[string]bool{}
	for _, v := range vars {
		rv := ReportVariable{Name: v.Name, Required: !v.HasDefault}
		if v.HasDefault {
			rv.Default = v.Default
		} else {
			required[v.Name] = true
		}
		report.Variables = append(report.Variables, rv)
	}
	// Required variables stay visible in the image names instead of
	// failing the listing.
	images, err := components.ResolvedImages(func(name string) (string, bool) {
		if required[name] {
			return "${" + name + "}", true
		}
		return "", false
	})
	if err != nil {
		return nil, contractErr("its %s: %v", checked.ComponentsFile, err)
	}
	report.Images = append(report.Images, images...)
	report.CRDs = contractCRDs(components.CustomResourceDefinitions())
	return report, nil
}

// identifyProvider tells the provider type, name and version of an
// artifact: from its annotations where present; else the type from its
// components file, the name from its title or repository
// ({type}-{name}), the version from the tag.
func identifyProvider(f *Fetched) (ReportProvider, error) {
	a := f.Annotations
	p := ReportProvider{Type: a[AnnotationProviderType], Name: a[AnnotationProviderName], Version: f.Ref.Tag, Source: a[AnnotationSource]}
	if p.Version == "" {
		p.Version = a[AnnotationVersion]
	}
	if p.Type == "" {
		var found []string
		for file := range f.Files {
			if t, ok := strings.CutSuffix(file, "-components.yaml"); ok && clusterctl.IsProviderType(t) {
				found = append(found, t)
			}
		}
		slices.Sort(found)
		switch len(found) {
		case 0:
			return p, &LayoutError{Ref: f.Ref.String(), Problem: "its layer holds no {type}-components.yaml; it holds " + listFiles(f.Files),
				Hint: "a provider artifact holds metadata.yaml and its components file, e.g. core-components.yaml"}
		case 1:
			p.Type = found[0]
		default:
			return p, &LayoutError{Ref: f.Ref.String(), Problem: fmt.Sprintf("it holds the components of several provider types (%s)", strings.Join(found, ", ")),
				Hint: "a provider artifact holds one provider"}
		}
	}
	if !clusterctl.IsProviderType(p.Type) {
		return p, &LayoutError{Ref: f.Ref.String(), Problem: fmt.Sprintf("its annotation %s is %q, not a provider type", AnnotationProviderType, p.Type)}
	}
	if p.Name == "" {
		for _, candidate := range []string{a[AnnotationTitle], lastElement(f.Ref.Repository)} {
			if t, n, ok := splitTypeName(candidate); ok && t == p.Type {
				p.Name = n
				break
			}
		}
	}
	return p, nil
}

func lastElement(repository string) string {
	return repository[strings.LastIndex(repository, "/")+1:]
}
