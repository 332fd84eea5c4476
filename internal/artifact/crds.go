package artifact

import (
	"maps"
	"regexp"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// contractLabel matches the label by which a CRD declares the API versions
// implementing a Cluster API contract: cluster.x-k8s.io/<contract>, e.g.
// cluster.x-k8s.io/v1beta2: v1beta1_v1beta2. Other cluster.x-k8s.io/ labels
// (provider, …) do not match.
var contractLabel = regexp.MustCompile(`^cluster\.x-k8s\.io/(v[0-9]+(?:(?:alpha|beta)[0-9]+)?)$`)

// contractCRDs lists the CustomResourceDefinitions of the components
// (clusterctl.Components.CustomResourceDefinitions, decoded once for every
// question inspect asks) with the contracts their labels declare, sorted
// by name.
func contractCRDs(objs []*unstructured.Unstructured) []ReportCRD {
	crds := make([]ReportCRD, 0, len(objs))
	for _, crd := range objs {
		group, _, _ := unstructured.NestedString(crd.Object, "spec", "group")
		kind, _, _ := unstructured.NestedString(crd.Object, "spec", "names", "kind")
		report := ReportCRD{
			Name:      crd.GetName(),
			Group:     group,
			Kind:      kind,
			Versions:  []string{},
			Contracts: map[string][]string{},
		}
		versions, _, _ := unstructured.NestedSlice(crd.Object, "spec", "versions")
		for _, v := range versions {
			if m, ok := v.(map[string]any); ok {
				if name, ok := m["name"].(string); ok {
					report.Versions = append(report.Versions, name)
				}
			}
		}
		labels := crd.GetLabels()
		for _, key := range slices.Sorted(maps.Keys(labels)) {
			if m := contractLabel.FindStringSubmatch(key); m != nil {
				report.Contracts[m[1]] = strings.Split(labels[key], "_")
			}
		}
		crds = append(crds, report)
	}
	slices.SortFunc(crds, func(a, b ReportCRD) int { return strings.Compare(a.Name, b.Name) })
	return crds
}
