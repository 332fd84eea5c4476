package artifact

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"maps"
	"regexp"
	"slices"
	"strings"

	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"
)

// contractLabel matches the label by which a CRD declares the API versions
// implementing a Cluster API contract: cluster.x-k8s.io/<contract>, e.g.
// cluster.x-k8s.io/v1beta2: v1beta1_v1beta2. Other cluster.x-k8s.io/ labels
// (provider, …) do not match.
var contractLabel = regexp.MustCompile(`^cluster\.x-k8s\.io/(v[0-9]+(?:(?:alpha|beta)[0-9]+)?)$`)

// crdDocument is the part of a CustomResourceDefinition inspect reports.
type crdDocument struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Metadata   struct {
		Name   string            `json:"name"`
		Labels map[string]string `json:"labels"`
	} `json:"metadata"`
	Spec struct {
		Group string `json:"group"`
		Names struct {
			Kind string `json:"kind"`
		} `json:"names"`
		Versions []struct {
			Name string `json:"name"`
		} `json:"versions"`
	} `json:"spec"`
}

// contractCRDs lists the CustomResourceDefinitions of a components file
// with the contracts their labels declare, sorted by name.
func contractCRDs(components []byte) ([]ReportCRD, error) {
	reader := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(components)))
	crds := []ReportCRD{}
	for doc := 1; ; doc++ {
		data, err := reader.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("reading YAML document %d: %w", doc, err)
		}
		// Only CRDs need decoding; most documents are not.
		if !bytes.Contains(data, []byte("CustomResourceDefinition")) {
			continue
		}
		var crd crdDocument
		if err := yaml.Unmarshal(data, &crd); err != nil {
			return nil, fmt.Errorf("decoding YAML document %d: %w", doc, err)
		}
		if crd.Kind != "CustomResourceDefinition" || !strings.HasPrefix(crd.APIVersion, "apiextensions.k8s.io/") {
			continue
		}
		report := ReportCRD{
			Name:      crd.Metadata.Name,
			Group:     crd.Spec.Group,
			Kind:      crd.Spec.Names.Kind,
			Versions:  []string{},
			Contracts: map[string][]string{},
		}
		for _, v := range crd.Spec.Versions {
			report.Versions = append(report.Versions, v.Name)
		}
		for _, key := range slices.Sorted(maps.Keys(crd.Metadata.Labels)) {
			if m := contractLabel.FindStringSubmatch(key); m != nil {
				report.Contracts[m[1]] = strings.Split(crd.Metadata.Labels[key], "_")
			}
		}
		crds = append(crds, report)
	}
	slices.SortFunc(crds, func(a, b ReportCRD) int { return strings.Compare(a.Name, b.Name) })
	return crds, nil
}
