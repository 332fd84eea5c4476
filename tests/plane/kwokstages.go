package plane

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Images that cannot be pulled: kwok plays the kubelets of the plane's
// nodes and makes every pod Ready whatever its image, while a real kubelet
// cannot pull from a host under the reserved .invalid top-level domain
// (RFC 2606). So a pod with such an image, in a container or an init
// container (registry.invalid/cluster-api/cluster-api-controller:v1.14.3),
// gets what a kubelet reports for a failed pull instead: Pending, not
// Ready, the container waiting in ImagePullBackOff. Every other pod goes
// through kwok's own stages unchanged.

// unpullableImage matches an image on a host under .invalid, with or
// without a port. The same Go (RE2) expression serves kwok's jq selectors
// (gojq) and its templates (sprig's regexMatch).
const unpullableImage = `(?i)^[^/]*\.invalid(:[0-9]+)?/`

// backoffStage names the stage that reports the failed pull.
const backoffStage = "pod-image-pull-backoff"

// jqString quotes s as a jq string literal (JSON's syntax).
func jqString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// hasUnpullableImage yields true for each container or init container
// whose image is on a .invalid host.
var hasUnpullableImage = `(.spec.containers[]?, .spec.initContainers[]?) | .image | test(` + jqString(unpullableImage) + `)`

// backoffReported is true once the pod's status is the one backoffStage
// writes for its current images: without it, the stage would match again
// after its own patch, forever.
const backoffReported = `[.spec.initContainers[]?.image] == [.status.initContainerStatuses[]?.image]` +
	` and [.spec.containers[]?.image] == [.status.containerStatuses[]?.image]` +
	` and any(.status.initContainerStatuses[]?, .status.containerStatuses[]?; .state.waiting.reason == "ImagePullBackOff")`

// backoffStatus is the status a kubelet reports for a pod with an image it
// cannot pull: init containers run in order, so one that cannot be pulled
// holds up those after it and every regular container (PodInitializing);
// otherwise regular containers that can be pulled run.
var backoffStatus = strings.ReplaceAll(`{{ $now := Now }}
{{ $unpullable := UNPULLABLE }}
{{ $blocked := false }}
{{ $incomplete := list }}
{{ $unready := list }}

initContainerStatuses:
{{ range .spec.initContainers }}
{{ $sidecar := eq ( or .restartPolicy "" ) "Always" }}
- image: {{ .image | Quote }}
  name: {{ .name | Quote }}
  restartCount: 0
  {{ if or $blocked ( regexMatch $unpullable .image ) }}
  {{ $incomplete = append $incomplete .name }}
  {{ if $sidecar }}{{ $unready = append $unready .name }}{{ end }}
  ready: false
  started: false
  state:
    waiting:
      {{ if $blocked }}
      reason: PodInitializing
      {{ else }}
      {{ $host := regexReplaceAll ":[0-9]+$" ( regexFind "^[^/]*" .image ) "" }}
      message: {{ printf "Back-off pulling image %q: ErrImagePull: failed to resolve reference %q: dial tcp: lookup %s: no such host" .image .image $host | Quote }}
      reason: ImagePullBackOff
      {{ end }}
  {{ $blocked = true }}
  {{ else if $sidecar }}
  ready: true
  started: true
  state:
    running:
      startedAt: {{ $now | Quote }}
  {{ else }}
  ready: true
  started: false
  state:
    terminated:
      exitCode: 0
      finishedAt: {{ $now | Quote }}
      reason: Completed
      startedAt: {{ $now | Quote }}
  {{ end }}
{{ end }}

containerStatuses:
{{ range .spec.containers }}
- image: {{ .image | Quote }}
  name: {{ .name | Quote }}
  restartCount: 0
  {{ if or $blocked ( regexMatch $unpullable .image ) }}
  {{ $unready = append $unready .name }}
  ready: false
  started: false
  state:
    waiting:
      {{ if $blocked }}
      reason: PodInitializing
      {{ else }}
      {{ $host := regexReplaceAll ":[0-9]+$" ( regexFind "^[^/]*" .image ) "" }}
      message: {{ printf "Back-off pulling image %q: ErrImagePull: failed to resolve reference %q: dial tcp: lookup %s: no such host" .image .image $host | Quote }}
      reason: ImagePullBackOff
      {{ end }}
  {{ else }}
  ready: true
  started: true
  state:
    running:
      startedAt: {{ $now | Quote }}
  {{ end }}
{{ end }}

{{ $notReady := printf "containers with unready status: [%s]" ( join " " $unready ) }}
conditions:
- lastTransitionTime: {{ $now | Quote }}
  status: "True"
  type: PodReadyToStartContainers
- lastTransitionTime: {{ $now | Quote }}
  {{ if $incomplete }}
  message: {{ printf "containers with incomplete status: [%s]" ( join " " $incomplete ) | Quote }}
  reason: ContainersNotInitialized
  status: "False"
  {{ else }}
  status: "True"
  {{ end }}
  type: Initialized
- lastTransitionTime: {{ $now | Quote }}
  message: {{ $notReady | Quote }}
  reason: ContainersNotReady
  status: "False"
  type: ContainersReady
- lastTransitionTime: {{ $now | Quote }}
  message: {{ $notReady | Quote }}
  reason: ContainersNotReady
  status: "False"
  type: Ready

{{ $hostIPs := NodeIPsWith .spec.nodeName }}
{{ with $hostIPs }}
hostIP: {{ index . 0 | Quote }}
hostIPs:
{{ range . }}
- ip: {{ . | Quote }}
{{ end }}
{{ end }}
{{ $podIPs := PodIPsWith .spec.nodeName ( or .spec.hostNetwork false ) ( or .metadata.uid "" ) ( or .metadata.name "" ) ( or .metadata.namespace "" ) }}
{{ with $podIPs }}
podIP: {{ index . 0 | Quote }}
podIPs:
{{ range . }}
- ip: {{ . | Quote }}
{{ end }}
{{ end }}
phase: Pending
startTime: {{ or .status.startTime $now | Quote }}
`, "UNPULLABLE", strconv.Quote(unpullableImage))

// kwokStages returns the stage files kwok runs with: those `make tools`
// copies from kwok's fast stages into binDir, except pod-ready, which is
// written to runDir/kwok-stages keeping pods with an image on a .invalid
// host out, and pod-image-pull-backoff beside it for those pods.
func kwokStages(binDir, runDir string) ([]string, error) {
	dir := filepath.Join(binDir, "assets", "kwok-stages")
	stages, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil || len(stages) == 0 {
		return nil, fmt.Errorf("no stage files in %s; build them with `make tools`", dir)
	}
	own := filepath.Join(runDir, "kwok-stages")
	if err := os.MkdirAll(own, 0o755); err != nil {
		return nil, err
	}
	readyFound := false
	for i, path := range stages {
		if filepath.Base(path) != "pod-ready.yaml" {
			continue
		}
		readyFound = true
		data, err := os.ReadFile(path)
		if err != nil {
			return nil, err
		}
		if data, err = excludeUnpullable(data); err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		stages[i] = filepath.Join(own, "pod-ready.yaml")
		if err := os.WriteFile(stages[i], data, 0o644); err != nil {
			return nil, err
		}
	}
	if !readyFound {
		return nil, fmt.Errorf("no pod-ready.yaml in %s; build the stages with `make tools`", dir)
	}
	data, err := marshalYAML(stage{
		APIVersion: "kwok.x-k8s.io/v1alpha1",
		Kind:       "Stage",
		Metadata:   stageMeta{Name: backoffStage},
		Spec: stageSpec{
			ResourceRef: stageRef{APIGroup: "v1", Kind: "Pod"},
			Selector: stageSelector{MatchExpressions: []stageExpr{
				{Key: ".metadata.deletionTimestamp", Operator: "DoesNotExist"},
				{Key: ".status.phase", Operator: "In", Values: []string{"Pending"}},
				{Key: hasUnpullableImage, Operator: "In", Values: []string{"true"}},
				{Key: backoffReported, Operator: "NotIn", Values: []string{"true"}},
			}},
			Next: stageNext{StatusTemplate: backoffStatus},
		},
	})
	if err != nil {
		return nil, err
	}
	backoff := filepath.Join(own, backoffStage+".yaml")
	if err := os.WriteFile(backoff, data, 0o644); err != nil {
		return nil, err
	}
	return append(stages, backoff), nil
}

// excludeUnpullable adds to the pod-ready stage's selector the condition
// that no container's image is on a .invalid host.
func excludeUnpullable(data []byte) ([]byte, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, err
	}
	exprs := yamlPath(&doc, "spec", "selector", "matchExpressions")
	if exprs == nil || exprs.Kind != yaml.SequenceNode {
		return nil, fmt.Errorf("no spec.selector.matchExpressions in the pod-ready stage")
	}
	var expr yaml.Node
	if err := expr.Encode(stageExpr{Key: hasUnpullableImage, Operator: "NotIn", Values: []string{"true"}}); err != nil {
		return nil, err
	}
	exprs.Content = append(exprs.Content, &expr)
	return marshalYAML(&doc)
}

// marshalYAML writes v indented as kwok's own stage files are.
func marshalYAML(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(2)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	if err := enc.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// yamlPath returns the node at the keys' path in a document, or nil.
func yamlPath(n *yaml.Node, keys ...string) *yaml.Node {
	if n.Kind == yaml.DocumentNode && len(n.Content) == 1 {
		n = n.Content[0]
	}
	for _, key := range keys {
		if n.Kind != yaml.MappingNode {
			return nil
		}
		var next *yaml.Node
		for i := 0; i+1 < len(n.Content); i += 2 {
			if n.Content[i].Value == key {
				next = n.Content[i+1]
			}
		}
		if next == nil {
			return nil
		}
		n = next
	}
	return n
}

// The parts of kwok's Stage (kwok.x-k8s.io/v1alpha1) written here.
type stage struct {
	APIVersion string    `yaml:"apiVersion"`
	Kind       string    `yaml:"kind"`
	Metadata   stageMeta `yaml:"metadata"`
	Spec       stageSpec `yaml:"spec"`
}

type stageMeta struct {
	Name string `yaml:"name"`
}

type stageSpec struct {
	ResourceRef stageRef      `yaml:"resourceRef"`
	Selector    stageSelector `yaml:"selector"`
	Next        stageNext     `yaml:"next"`
}

type stageRef struct {
	APIGroup string `yaml:"apiGroup"`
	Kind     string `yaml:"kind"`
}

type stageSelector struct {
	MatchExpressions []stageExpr `yaml:"matchExpressions"`
}

type stageExpr struct {
	Key      string   `yaml:"key"`
	Operator string   `yaml:"operator"`
	Values   []string `yaml:"values,omitempty"`
}

type stageNext struct {
	StatusTemplate string `yaml:"statusTemplate"`
}
