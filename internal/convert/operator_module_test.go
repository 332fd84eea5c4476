package convert

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"

	"k8s.io/apimachinery/pkg/api/resource"
)

const repoRoot = "../.."

var (
	operatorDirOnce sync.Once
	operatorDir     string
	operatorDirErr  error
)

// operatorModuleDir is the source of sigs.k8s.io/cluster-api-operator at
// the version tests/tools/capioperator requires (OperatorVersion), found
// as the Makefile finds Cluster API's: go list -m in that module.
func operatorModuleDir(t testing.TB) string {
	t.Helper()
	operatorDirOnce.Do(func() {
		cmd := exec.Command("go", "-C", filepath.Join(repoRoot, "tests", "tools", "capioperator"),
			"list", "-mod=mod", "-m", "-f", "{{.Dir}}@{{.Version}}", "sigs.k8s.io/cluster-api-operator")
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			operatorDirErr = err
			operatorDir = stderr.String()
			return
		}
		operatorDir = strings.TrimSpace(string(out))
	})
	if operatorDirErr != nil {
		t.Fatalf("finding the cluster-api-operator module source: %v: %s", operatorDirErr, operatorDir)
	}
	at := strings.LastIndex(operatorDir, "@")
	dir, version := operatorDir[:at], operatorDir[at+1:]
	if version != OperatorVersion {
		t.Fatalf("tests/tools/capioperator requires cluster-api-operator %s, the converter mirrors %s: update OperatorVersion and the mirrored types together", version, OperatorVersion)
	}
	return dir
}

// operatorExample is one YAML block of the operator's documentation that
// holds operator provider CRs (or a spec: or status: fragment of one).
type operatorExample struct {
	// File is the Markdown file, relative to the module; Block counts the
	// file's ```yaml blocks from 1.
	File  string
	Block int
	YAML  []byte
	// Fragment: the block was a bare spec:/status: fragment, wrapped into
	// an InfrastructureProvider example-system/example.
	Fragment bool
}

var yamlBlock = regexp.MustCompile("(?s)```yaml\n(.*?)```")

// operatorExamples extracts every YAML block of the operator's docs/ that
// holds an operator.cluster.x-k8s.io object or a spec:/status: fragment of
// one (docs/book/src/03_topics/02_configuration/05_provider-spec-configuration.md
// documents the fields that way).
func operatorExamples(t testing.TB) []operatorExample {
	t.Helper()
	root := operatorModuleDir(t)
	var files []string
	err := filepath.WalkDir(filepath.Join(root, "docs"), func(path string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(path, ".md") {
			files = append(files, path)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(files)
	var out []operatorExample
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		rel, _ := filepath.Rel(root, file)
		for i, m := range yamlBlock.FindAllSubmatch(data, -1) {
			block := m[1]
			switch {
			case bytes.Contains(block, []byte("apiVersion: "+OperatorGroup+"/")):
				out = append(out, operatorExample{File: rel, Block: i + 1, YAML: block})
			case isFragment(block):
				out = append(out, operatorExample{File: rel, Block: i + 1, YAML: wrapFragment(block), Fragment: true})
			}
		}
	}
	return out
}

// isFragment tells a block that shows part of a provider: "..." lines
// around a spec: or status: mapping.
func isFragment(block []byte) bool {
	body := dedent(dropEllipses(block))
	return bytes.HasPrefix(body, []byte("spec:")) || bytes.HasPrefix(body, []byte("status:"))
}

func wrapFragment(block []byte) []byte {
	head := "apiVersion: " + OperatorAPIVersion + "\nkind: InfrastructureProvider\nmetadata:\n  name: example\n  namespace: example-system\n"
	return append([]byte(head), dedent(dropEllipses(block))...)
}

func dropEllipses(block []byte) []byte {
	var keep [][]byte
	for _, line := range bytes.Split(block, []byte("\n")) {
		if strings.TrimSpace(string(line)) != "..." {
			keep = append(keep, line)
		}
	}
	return bytes.Join(keep, []byte("\n"))
}

// dedent removes the indentation every non-empty line shares.
func dedent(block []byte) []byte {
	lines := strings.Split(string(block), "\n")
	indent := -1
	for _, l := range lines {
		if strings.TrimSpace(l) == "" {
			continue
		}
		n := len(l) - len(strings.TrimLeft(l, " "))
		if indent < 0 || n < indent {
			indent = n
		}
	}
	for i, l := range lines {
		if len(l) >= indent && indent > 0 {
			lines[i] = l[indent:]
		}
	}
	return []byte(strings.TrimLeft(strings.Join(lines, "\n"), "\n"))
}

func mustQuantity(s string) resource.Quantity { return resource.MustParse(s) }
