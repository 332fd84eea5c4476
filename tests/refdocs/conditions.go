package refdocs

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strconv"
	"strings"
)

// conditionFiles are the API packages' condition constants, with the
// kinds they are set on.
var conditionFiles = []struct{ file, group, kinds string }{
	{"api/providers/v1alpha1/conditions.go", "providers.capwright.io", "the seven provider kinds"},
	{"api/tenancy/v1alpha1/conditions.go", "tenancy.capwright.io", "Tenant (and its status.clusters entries)"},
	{"api/clusters/v1alpha1/conditions.go", "clusters.capwright.io", "CapwrightControlPlane and CapwrightCluster"},
}

// constant is one string constant of a conditions.go.
type constant struct {
	name, value, doc, section string
}

// ReasonConstants maps the name of each string constant named *Reason in
// file (an api/*/v1alpha1/conditions.go) to its value.
func ReasonConstants(file string) (map[string]string, error) {
	blocks, err := constBlocks(file)
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	for _, blk := range blocks {
		for _, c := range blk.consts {
			if strings.HasSuffix(c.name, "Reason") {
				out[c.name] = c.value
			}
		}
	}
	return out, nil
}

// conditionsPage lists every condition type and reason the API defines,
// with its doc comment: `XCondition` constants are types, `XReason`
// constants reasons. A one-line comment that does not start with a
// constant's name ("// ArtifactResolved.") heads the reasons below it.
func conditionsPage(root string) (string, error) {
	var b strings.Builder
	header(&b, "Conditions and reasons", "the condition constants of api/*/v1alpha1/conditions.go")
	b.WriteString("Every condition is a `metav1.Condition` carrying the generation it describes\n" +
		"(`observedGeneration`). What to do about each reason:\n" +
		"[troubleshooting.md](../troubleshooting.md) (providers, Tenants) and\n" +
		"[clusters.md](../clusters.md#troubleshooting) (contract kinds).\n\n")
	for _, f := range conditionFiles {
		blocks, err := constBlocks(filepath.Join(root, f.file))
		if err != nil {
			return "", err
		}
		fmt.Fprintf(&b, "## %s\n\nSet on %s; from `%s`.\n\n", f.group, f.kinds, f.file)
		for _, blk := range blocks {
			var types, reasons []constant
			for _, c := range blk.consts {
				switch {
				case strings.HasSuffix(c.name, "Condition"):
					types = append(types, c)
				case strings.HasSuffix(c.name, "Reason"):
					reasons = append(reasons, c)
				}
			}
			if len(types) > 0 {
				fmt.Fprintf(&b, "### Condition types\n\n%s\n\n| Type | Meaning |\n|---|---|\n", text(blk.doc))
				for _, c := range types {
					fmt.Fprintf(&b, "| `%s` | %s |\n", c.value, cell(strip(c)))
				}
				b.WriteString("\n")
			}
			if len(reasons) > 0 {
				fmt.Fprintf(&b, "### %s\n\n", heading(blk.doc, "Reasons"))
				b.WriteString("| Reason | For | Meaning |\n|---|---|---|\n")
				for _, c := range reasons {
					fmt.Fprintf(&b, "| `%s` | %s | %s |\n", c.value, cell(c.section), cell(strip(c)))
				}
				b.WriteString("\n")
			}
		}
	}
	return b.String(), nil
}

// heading names a reasons block by its doc comment's first sentence.
func heading(doc, fallback string) string {
	doc = text(doc)
	if doc == "" {
		return fallback
	}
	first, _, _ := strings.Cut(doc, ". ")
	return strings.TrimSuffix(first, ".")
}

// strip drops the constant's own name from the front of its doc.
func strip(c constant) string {
	d := text(c.doc)
	for _, p := range []string{c.name + ":", c.name + " is", c.name} {
		if rest, ok := strings.CutPrefix(d, p); ok {
			if p == c.name+" is" {
				return "True" + strings.TrimPrefix(rest, " True")
			}
			rest = strings.TrimSpace(rest)
			if rest != "" {
				rest = strings.ToUpper(rest[:1]) + rest[1:]
			}
			return rest
		}
	}
	return d
}

type constBlock struct {
	doc    string
	consts []constant
}

func constBlocks(file string) ([]constBlock, error) {
	f, err := parser.ParseFile(token.NewFileSet(), file, nil, parser.ParseComments)
	if err != nil {
		return nil, err
	}
	var blocks []constBlock
	for _, decl := range f.Decls {
		gd, ok := decl.(*ast.GenDecl)
		if !ok || gd.Tok != token.CONST {
			continue
		}
		blk := constBlock{doc: gd.Doc.Text()}
		section, prevDoc := "", ""
		for _, spec := range gd.Specs {
			vs := spec.(*ast.ValueSpec)
			doc := vs.Doc.Text()
			if doc != "" && isSectionHead(doc, vs) {
				section, doc = strings.TrimSuffix(strings.TrimSpace(doc), "."), ""
			}
			for i, name := range vs.Names {
				if i >= len(vs.Values) {
					continue
				}
				lit, ok := vs.Values[i].(*ast.BasicLit)
				if !ok || lit.Kind != token.STRING {
					continue
				}
				value, err := strconv.Unquote(lit.Value)
				if err != nil {
					return nil, err
				}
				d := doc
				if d == "" && strings.Contains(prevDoc, name.Name) {
					d = prevDoc // "// AReason / BReason: …" documents both
				}
				blk.consts = append(blk.consts, constant{name: name.Name, value: value, doc: d, section: section})
			}
			if doc != "" {
				prevDoc = doc
			} else if vs.Doc != nil {
				prevDoc = ""
			}
		}
		blocks = append(blocks, blk)
	}
	return blocks, nil
}

// isSectionHead: a one-line comment that does not document the constant
// under it ("// Compatible.", "// Installed and Available.").
func isSectionHead(doc string, vs *ast.ValueSpec) bool {
	doc = strings.TrimSpace(doc)
	if strings.Contains(doc, "\n") || !strings.HasSuffix(doc, ".") {
		return false
	}
	for _, n := range vs.Names {
		if strings.Contains(doc, n.Name) {
			return false
		}
	}
	return len(strings.Fields(doc)) <= 6
}
