package clusterctl

import (
	"fmt"
	"slices"

	"github.com/fluxcd/pkg/envsubst"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// podSpecPaths locates the pod spec in the workload kinds that run
// containers.
func podSpecPaths() map[string][]string {
	template := []string{"spec", "template", "spec"}
	return map[string][]string{
		"Pod":         {"spec"},
		"Deployment":  template,
		"DaemonSet":   template,
		"StatefulSet": template,
		"ReplicaSet":  template,
		"Job":         template,
		"CronJob":     {"spec", "jobTemplate", "spec", "template", "spec"},
	}
}

// Images lists the container images (containers and initContainers of
// workloads) the components run once their variables take their defaults:
// what an air-gapped site must mirror. Sorted and unique. An image that
// uses a variable without a default is an error; see ResolvedImages.
func Images(components []byte) ([]string, error) {
	return ResolvedImages(components, nil)
}

// ResolvedImages is Images with variable values: value(name) gives a
// variable's value when it is set (Flux semantics: ${VAR:=d} also falls
// back to d when the value is empty); unset variables take their defaults.
// value may be nil.
func ResolvedImages(components []byte, value func(name string) (string, bool)) ([]string, error) {
	c, err := Decode(components)
	if err != nil {
		return nil, err
	}
	return c.ResolvedImages(value)
}

// ResolvedImages is ResolvedImages of decoded components.
func (c *Components) ResolvedImages(value func(name string) (string, bool)) ([]string, error) {
	objs := c.objs
	mapping := func(name string) (string, bool) {
		if value == nil {
			return "", false
		}
		return value(name)
	}
	paths := podSpecPaths()
	var images []string
	for _, o := range objs {
		path, ok := paths[o.GetKind()]
		if !ok {
			continue
		}
		for _, field := range []string{"initContainers", "containers"} {
			containers, _, err := unstructured.NestedSlice(o.Object, append(slices.Clone(path), field)...)
			if err != nil {
				return nil, fmt.Errorf("%s: reading %s: %w", o, field, err)
			}
			for _, c := range containers {
				image, err := containerImage(c, o, mapping)
				if err != nil {
					return nil, err
				}
				images = append(images, image)
			}
		}
	}
	slices.Sort(images)
	return slices.Compact(images), nil
}

// containerImage returns the image of one container, variables substituted
// unless the object opts out of substitution.
func containerImage(container any, o object, mapping func(string) (string, bool)) (string, error) {
	c, ok := container.(map[string]any)
	if !ok {
		return "", fmt.Errorf("%s: a container is not an object", o)
	}
	name, _ := c["name"].(string)
	image, _ := c["image"].(string)
	if image == "" {
		return "", fmt.Errorf("%s: container %q has no image", o, name)
	}
	if substitutionDisabled(o) {
		return image, nil
	}
	resolved, err := envsubst.Eval(image, mapping)
	if err != nil {
		return "", fmt.Errorf("%s: image %q of container %q uses a variable that has neither a value nor a default: %w", o, image, name, err)
	}
	return resolved, nil
}
