package artifact

import (
	"fmt"
	"maps"
	"path"
	"slices"
	"strings"

	"github.com/capwright/capwright/internal/clusterctl"
)

// ProviderArtifact is a fetched artifact checked against the contract for
// one provider and version.
type ProviderArtifact struct {
	Fetched *Fetched
	// Metadata is metadata.yaml.
	Metadata []byte
	// Components is the components file, named ComponentsFile.
	Components     []byte
	ComponentsFile string
	// Templates are the cluster-template*.yaml files at the root, by name.
	Templates map[string][]byte
}

// ProviderAnnotations are the manifest annotations of the contract for a
// provider release; source may be "".
func ProviderAnnotations(providerType, name, version, source string) map[string]string {
	a := map[string]string{
		AnnotationTitle:        providerType + "-" + name,
		AnnotationVersion:      version,
		AnnotationProviderType: providerType,
		AnnotationProviderName: name,
	}
	if source != "" {
		a[AnnotationSource] = source
	}
	return a
}

// CheckProviderArtifact checks that f is the release version of provider
// name of providerType: metadata.yaml and the type's components file at the
// root of the layer, and the contract annotations, where present, naming
// this provider and version (artifacts published before the contract may
// lack them). Errors are *LayoutError.
func CheckProviderArtifact(f *Fetched, providerType, name, version string) (*ProviderArtifact, error) {
	componentsFile := clusterctl.ComponentsFile(providerType)
	if componentsFile == "" {
		return nil, fmt.Errorf("unknown provider type %q", providerType)
	}
	ref := f.Ref.String()
	expected := ProviderAnnotations(providerType, name, version, "")
	for _, key := range []string{AnnotationProviderType, AnnotationProviderName, AnnotationVersion, AnnotationTitle} {
		found, ok := f.Annotations[key]
		if !ok || sameAnnotation(key, found, expected[key]) {
			continue
		}
		return nil, &LayoutError{
			Ref:     ref,
			Problem: fmt.Sprintf("its annotation %s is %q, expected %q", key, found, expected[key]),
			Hint:    fmt.Sprintf("check that the URL points to the %s provider %s and the version is %s", providerType, name, version),
		}
	}

	var missing []string
	for _, file := range []string{MetadataFile, componentsFile} {
		if _, ok := f.Files[file]; !ok {
			missing = append(missing, file)
		}
	}
	if len(missing) > 0 {
		return nil, &LayoutError{
			Ref:     ref,
			Problem: fmt.Sprintf("its layer lacks %s at the root; it holds %s", strings.Join(missing, " and "), listFiles(f.Files)),
			Hint:    fmt.Sprintf("a %s provider artifact holds %s and %s", providerType, MetadataFile, componentsFile),
		}
	}

	templates := map[string][]byte{}
	for file, data := range f.Files {
		if matched, _ := path.Match("cluster-template*.yaml", file); matched {
			templates[file] = data
		}
	}
	return &ProviderArtifact{
		Fetched:        f,
		Metadata:       f.Files[MetadataFile],
		Components:     f.Files[componentsFile],
		ComponentsFile: componentsFile,
		Templates:      templates,
	}, nil
}

// sameAnnotation compares annotation values; versions match with or
// without their leading v.
func sameAnnotation(key, found, expected string) bool {
	if key == AnnotationVersion {
		return strings.TrimPrefix(found, "v") == strings.TrimPrefix(expected, "v")
	}
	return found == expected
}

func listFiles(files map[string][]byte) string {
	if len(files) == 0 {
		return "no files"
	}
	return strings.Join(slices.Sorted(maps.Keys(files)), ", ")
}
