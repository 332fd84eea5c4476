package dryrun

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"path"
	"regexp"
	"strconv"
	"strings"

	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	"github.com/fluxcd/pkg/apis/kustomize"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	kyaml "sigs.k8s.io/kustomize/kyaml/yaml"
)

// Kustomize reads every object it builds (kyaml's ByteReader) and, to
// resolve YAML anchors, copies each mapping's whole subtree, at every
// level: the cost grows with the depth of the YAML, and a CRD's schema is
// the deepest part of a provider. For Cluster API's core that is two
// thirds of the build's time and four fifths of its garbage (133 MB of
// allocations a build, BenchmarkBuildOfTheCoreProvider). Nothing in
// Flux's build reads or changes a schema but a patch of the CRD's spec
// and the variables' substitution: so, unless a patch may, the schemas
// are set aside before the build, a short string in their place, and put
// back in the objects built; a schema the substitution would change is
// put back before it substitutes. TestSchemasSetAsideBuildAsFluxDoes
// holds the result to kustomize-controller's own build.

// schemaToken starts the string a schema set aside is replaced by.
const schemaToken = "capwright-dry-run-schema-"

// schemasAside are the CRD schemas set aside from the files given to the
// build, by token.
type schemasAside map[string]schemaAside

// schemaAside is a schema set aside: its YAML, and whether Flux's
// substitution would change its text ("${" or "$$": Kubernetes' own
// descriptions of $(VAR) references have "$$").
type schemaAside struct {
	node          *kyaml.Node
	substitutable bool
}

// setAside returns files with the schemas of their CRDs replaced by
// tokens, and the schemas, when the build cannot touch them; files
// themselves and no schemas otherwise. A schema stays in place when the
// source has a kustomization of its own, when a patch or a component
// could change a CRD beyond its metadata, and when it has an anchor, an
// alias or a merge key. One with a variable or an escape is set aside
// too, and put back before Flux's substitution (putBackToSubstitute).
func setAside(files map[string][]byte, ks *kustomizev1.Kustomization) (map[string][]byte, schemasAside) {
	if hasKustomization(files) || len(ks.Spec.Components) > 0 {
		return files, nil
	}
	for _, p := range ks.Spec.Patches {
		if mayChangeACRD(p.Patch, p.Target) {
			return files, nil
		}
	}
	aside := schemasAside{}
	out := make(map[string][]byte, len(files))
	for name, data := range files {
		out[name] = data
		if ext := path.Ext(name); (ext == ".yaml" || ext == ".yml") && bytes.Contains(data, []byte("CustomResourceDefinition")) {
			if rewritten, ok := aside.take(data); ok {
				out[name] = rewritten
			}
		}
	}
	if len(aside) == 0 {
		return files, nil
	}
	return out, aside
}

// take sets aside the schemas of the CRDs in one file of YAML documents
// and returns the file without them. It changes nothing, and is not ok,
// when the file does not decode (the build then says why) or has no
// schema to set aside.
func (a schemasAside) take(data []byte) ([]byte, bool) {
	var docs []*kyaml.Node
	dec := kyaml.NewDecoder(bytes.NewReader(data))
	for {
		var doc kyaml.Node
		err := dec.Decode(&doc)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, false
		}
		docs = append(docs, &doc)
	}
	taken := map[string]schemaAside{}
	for _, doc := range docs {
		if len(doc.Content) != 1 || !isCRD(doc.Content[0]) {
			continue
		}
		for _, version := range valueOf(valueOf(doc.Content[0], "spec").node, "versions").contentOf(kyaml.SequenceNode) {
			schema := valueOf(valueOf(version, "schema").node, "openAPIV3Schema")
			if schema.node == nil || schema.node.Kind != kyaml.MappingNode || !plain(schema.node) {
				continue
			}
			token := schemaToken + strconv.Itoa(len(a)+len(taken))
			taken[token] = schemaAside{node: schema.node, substitutable: substitutable(schema.node)}
			schema.parent.Content[schema.index] = &kyaml.Node{Kind: kyaml.ScalarNode, Tag: kyaml.NodeTagString, Value: token}
		}
	}
	if len(taken) == 0 {
		return nil, false
	}
	var b bytes.Buffer
	enc := kyaml.NewEncoder(&b)
	enc.SetIndent(2)
	for _, doc := range docs {
		if len(doc.Content) == 0 {
			continue // a document of comments only, which kustomize skips too
		}
		if err := enc.Encode(doc); err != nil {
			return nil, false
		}
	}
	if err := enc.Close(); err != nil {
		return nil, false
	}
	for token, schema := range taken {
		a[token] = schema
	}
	return b.Bytes(), true
}

// putBack puts the schemas set aside back into a CRD built, in place. A
// token it does not hold (put back already, or never set aside) is an
// error: the build copied what it should not have touched.
func (a schemasAside) putBack(o *unstructured.Unstructured) error {
	if len(a) == 0 || o.GetKind() != "CustomResourceDefinition" {
		return nil
	}
	versions, _, _ := unstructured.NestedFieldNoCopy(o.Object, "spec", "versions")
	list, _ := versions.([]any)
	for i, v := range list {
		version, _ := v.(map[string]any)
		token, found, _ := unstructured.NestedString(version, "schema", "openAPIV3Schema")
		if !found || !strings.HasPrefix(token, schemaToken) {
			continue
		}
		aside, ok := a[token]
		if !ok {
			return fmt.Errorf("CustomResourceDefinition %s: version %d has a schema set aside that is not there (%s)", o.GetName(), i, token)
		}
		delete(a, token)
		schema, err := asUnstructured(kyaml.NewRNode(aside.node))
		if err != nil {
			return fmt.Errorf("reading the schema of CustomResourceDefinition %s: %w", o.GetName(), err)
		}
		version["schema"].(map[string]any)["openAPIV3Schema"] = schema.Object
	}
	return nil
}

// substituteKey is the annotation or label that keeps Flux's
// substitution off an object when "disabled".
const substituteKey = "kustomize.toolkit.fluxcd.io/substitute"

// putBackToSubstitute puts back, into a CRD built, the schemas Flux's
// substitution would change, when it substitutes in the CRD (not
// disabled by its annotation or label): the substitution then sees the
// text Flux's does.
func (a schemasAside) putBackToSubstitute(n *kyaml.RNode) {
	if len(a) == 0 || n.GetKind() != "CustomResourceDefinition" ||
		n.GetAnnotations()[substituteKey] == kustomizev1.DisabledValue || n.GetLabels()[substituteKey] == kustomizev1.DisabledValue {
		return
	}
	for _, version := range valueOf(valueOf(n.YNode(), "spec").node, "versions").contentOf(kyaml.SequenceNode) {
		schema := valueOf(valueOf(version, "schema").node, "openAPIV3Schema")
		if schema.node == nil || schema.node.Kind != kyaml.ScalarNode {
			continue
		}
		if aside, ok := a[schema.node.Value]; ok && aside.substitutable {
			delete(a, schema.node.Value)
			schema.parent.Content[schema.index] = aside.node
		}
	}
}

// isCRD tells whether n is a CustomResourceDefinition of
// apiextensions.k8s.io/v1.
func isCRD(n *kyaml.Node) bool {
	kind, apiVersion := valueOf(n, "kind").node, valueOf(n, "apiVersion").node
	return kind != nil && apiVersion != nil && kind.Value == "CustomResourceDefinition" && apiVersion.Value == "apiextensions.k8s.io/v1"
}

// place is a value in a mapping: the node, its parent and its index in
// the parent's Content.
type place struct {
	node, parent *kyaml.Node
	index        int
}

// valueOf is the value of key in the mapping n; the zero place when there
// is none, or when the key is there more than once.
func valueOf(n *kyaml.Node, key string) place {
	if n == nil || n.Kind != kyaml.MappingNode {
		return place{}
	}
	var found place
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value != key {
			continue
		}
		if found.node != nil {
			return place{}
		}
		found = place{node: n.Content[i+1], parent: n, index: i + 1}
	}
	return found
}

// contentOf is the place's children when its node is of kind.
func (p place) contentOf(kind kyaml.Kind) []*kyaml.Node {
	if p.node == nil || p.node.Kind != kind {
		return nil
	}
	return p.node.Content
}

// plain tells whether nothing in the tree under n has an anchor, an
// alias or a merge key.
func plain(n *kyaml.Node) bool {
	if n.Kind == kyaml.AliasNode || n.Anchor != "" || n.Tag == kyaml.MergeTag {
		return false
	}
	for _, c := range n.Content {
		if !plain(c) {
			return false
		}
	}
	return true
}

// mayChangeACRD tells whether a patch of the Kustomization could change a
// CRD beyond its metadata: it may select CRDs, and it is not a strategic
// merge of metadata only (as Capwright's own patches of CRDs are) nor
// JSON6902 operations on /metadata only.
func mayChangeACRD(patch string, target *kustomize.Selector) bool {
	if target != nil && target.Kind != "" {
		re, err := regexp.Compile("^(?:" + target.Kind + ")$")
		if err == nil && !re.MatchString("CustomResourceDefinition") {
			return false
		}
	}
	var doc kyaml.Node
	if err := kyaml.Unmarshal([]byte(patch), &doc); err != nil || len(doc.Content) != 1 {
		return true
	}
	switch n := doc.Content[0]; n.Kind {
	case kyaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			switch n.Content[i].Value {
			case "apiVersion", "kind", "metadata", "$patch":
			default:
				return true
			}
		}
		return false
	case kyaml.SequenceNode:
		for _, op := range n.Content {
			for _, key := range []string{"path", "from"} {
				if v := valueOf(op, key).node; v != nil && !strings.HasPrefix(v.Value, "/metadata/") {
					return true
				}
			}
			if valueOf(op, "path").node == nil {
				return true
			}
		}
		return false
	}
	return true
}
