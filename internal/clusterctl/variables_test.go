package clusterctl_test

import (
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/capwright/capwright/internal/clusterctl"
	"github.com/capwright/capwright/internal/clusterctl/clusterctltest"
)

func TestParseVariablesOfRealComponents(t *testing.T) {
	tests := []struct {
		file string
		want map[string]string // name → default; all of them defaulted
	}{
		{"core-components.yaml", map[string]string{
			"CAPI_DIAGNOSTICS_ADDRESS":     ":8443",
			"CAPI_INSECURE_DIAGNOSTICS":    "false",
			"CLUSTER_TOPOLOGY":             "false",
			"EXP_MACHINE_POOL":             "true",
			"EXP_RUNTIME_SDK":              "false",
			"EXP_RECONCILER_RATE_LIMITING": "true",
		}},
		{"bootstrap-components.yaml", map[string]string{
			"KUBEADM_BOOTSTRAP_TOKEN_TTL": "15m",
			"EXP_MACHINE_POOL":            "true",
		}},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			vars, err := clusterctl.ParseVariables(clusterctltest.Read(t, clusterctltest.Current, tt.file))
			if err != nil {
				t.Fatalf("ParseVariables: %v", err)
			}
			byName := map[string]clusterctl.Variable{}
			for i, v := range vars {
				if i > 0 && vars[i-1].Name >= v.Name {
					t.Errorf("variables not sorted and unique: %q before %q", vars[i-1].Name, v.Name)
				}
				byName[v.Name] = v
			}
			for name, def := range tt.want {
				v, ok := byName[name]
				if !ok {
					t.Errorf("variable %s not found in %v", name, vars)
					continue
				}
				if !v.HasDefault || v.Default != def {
					t.Errorf("%s: HasDefault=%v Default=%q, want default %q", name, v.HasDefault, v.Default, def)
				}
			}
			if missing := clusterctl.MissingVariables(vars, func(string) bool { return false }); len(missing) != 0 {
				t.Errorf("variables without default in %s: %v, want none", tt.file, missing)
			}
		})
	}
}

// components wraps values into a ConfigMap, the way variables appear in
// real components.
func components(values ...string) []byte {
	var b strings.Builder
	b.WriteString("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\ndata:\n")
	for i, v := range values {
		b.WriteString("  k" + string(rune('a'+i)) + ": '" + v + "'\n")
	}
	return []byte(b.String())
}

func TestParseVariablesForms(t *testing.T) {
	tests := []struct {
		name   string
		values []string
		want   []clusterctl.Variable
	}{
		{"bare", []string{"${VAR}"}, []clusterctl.Variable{{Name: "VAR"}}},
		{":=", []string{"${VAR:=d}"}, []clusterctl.Variable{{Name: "VAR", Default: "d", HasDefault: true}}},
		{":-", []string{"${VAR:-d}"}, []clusterctl.Variable{{Name: "VAR", Default: "d", HasDefault: true}}},
		{"=", []string{"${VAR=d}"}, []clusterctl.Variable{{Name: "VAR", Default: "d", HasDefault: true}}},
		{":+ is empty when unset", []string{"--flag${VAR:+=on}"}, []clusterctl.Variable{{Name: "VAR", HasDefault: true}}},
		{":? requires a value", []string{"${VAR:?set VAR}"}, []clusterctl.Variable{{Name: "VAR"}}},
		{"empty default", []string{"${VAR:=}"}, []clusterctl.Variable{{Name: "VAR", HasDefault: true}}},
		{"default with colons", []string{"${ADDR:=:8443}"}, []clusterctl.Variable{{Name: "ADDR", Default: ":8443", HasDefault: true}}},
		{"string operation", []string{"${VAR,,}"}, []clusterctl.Variable{{Name: "VAR"}}},
		{"escaped", []string{"$${ESCAPED}", "x$${ESCAPED:=y}"}, []clusterctl.Variable{}},
		{"escaped next to a variable", []string{"$${ESCAPED}-${REAL:=r}"}, []clusterctl.Variable{{Name: "REAL", Default: "r", HasDefault: true}}},
		{"plain dollar", []string{"$HOME and $$"}, []clusterctl.Variable{}},
		{"every occurrence defaulted", []string{"${VAR:=a}", "${VAR:-b}"}, []clusterctl.Variable{{Name: "VAR", Default: "a", HasDefault: true}}},
		{"one bare occurrence makes it required", []string{"${VAR:=a}", "${VAR}"}, []clusterctl.Variable{{Name: "VAR"}}},
		{"bare first", []string{"${VAR}", "${VAR:=a}"}, []clusterctl.Variable{{Name: "VAR"}}},
		{"nested", []string{"${A:=x${B:=c}y}"}, []clusterctl.Variable{
			{Name: "A", Default: "x${B}y", HasDefault: true},
			{Name: "B", Default: "c", HasDefault: true},
		}},
		{"nested required", []string{"${A:=${B}}"}, []clusterctl.Variable{
			{Name: "A", Default: "${B}", HasDefault: true},
			{Name: "B"},
		}},
		{"sorted", []string{"${Z}", "${A}", "${M:=m}"}, []clusterctl.Variable{{Name: "A"}, {Name: "M", Default: "m", HasDefault: true}, {Name: "Z"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := clusterctl.ParseVariables(components(tt.values...))
			if err != nil {
				t.Fatalf("ParseVariables: %v", err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("ParseVariables(%q) = %+v, want %+v", tt.values, got, tt.want)
			}
		})
	}
}

func TestParseVariablesInKeysAndSkipped(t *testing.T) {
	data := []byte(`apiVersion: v1
kind: ConfigMap
metadata:
  name: keys
data:
  ${KEY}: value
---
# comments are not substituted: ${IN_COMMENT}
apiVersion: v1
kind: ConfigMap
metadata:
  name: skipped
  annotations:
    kustomize.toolkit.fluxcd.io/substitute: disabled
data:
  a: ${SKIPPED}
`)
	got, err := clusterctl.ParseVariables(data)
	if err != nil {
		t.Fatalf("ParseVariables: %v", err)
	}
	want := []clusterctl.Variable{{Name: "KEY"}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("ParseVariables = %+v, want %+v", got, want)
	}
}

// Flux v2.9 substitutes with fluxcd/pkg/envsubst v1.7.1, which cannot parse
// the colon-less -, + and ? forms: report them before Flux fails on them.
func TestParseVariablesUnsupportedForms(t *testing.T) {
	tests := []struct{ value, want string }{
		{"${VAR-d}", "use ${VAR:-…}"},
		{"${VAR+x}", "use ${VAR:+…}"},
		{"${VAR?x}", "use ${VAR:?…}"},
		{"${VAR", "escape a literal ${ as $${"},
	}
	for _, tt := range tests {
		t.Run(tt.value, func(t *testing.T) {
			_, err := clusterctl.ParseVariables(components(tt.value))
			if err == nil || !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), "ConfigMap c") {
				t.Errorf("ParseVariables(%q) error = %v, want one naming the object and containing %q", tt.value, err, tt.want)
			}
		})
	}
}

func TestMissingVariables(t *testing.T) {
	vars := []clusterctl.Variable{
		{Name: "A"},
		{Name: "B", HasDefault: true, Default: "b"},
		{Name: "C"},
		{Name: "D"},
	}
	provided := map[string]bool{"C": true}
	got := clusterctl.MissingVariables(vars, func(name string) bool { return provided[name] })
	if want := []string{"A", "D"}; !reflect.DeepEqual(got, want) {
		t.Errorf("MissingVariables = %v, want %v", got, want)
	}
	if got := clusterctl.MissingVariables(vars, nil); !reflect.DeepEqual(got, []string{"A", "C", "D"}) {
		t.Errorf("MissingVariables(nil) = %v", got)
	}
}

func TestCRDsSubstitutionFree(t *testing.T) {
	const crd = "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata:\n  name: widgets.example.com\nspec:\n  group: example.com\n  versions:\n  - name: v1\n    schema:\n      openAPIV3Schema:\n        description: %s\n        type: object\n"
	const deployment = "---\napiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: manager\n  namespace: ${NAMESPACE:=system}\n"
	tests := []struct {
		name, components string
		want             bool
	}{
		{"real core components", string(clusterctltest.Read(t, clusterctltest.Current, "core-components.yaml")), true},
		{"real bootstrap components", string(clusterctltest.Read(t, clusterctltest.Current, "bootstrap-components.yaml")), true},
		{"real control plane components", string(clusterctltest.Read(t, clusterctltest.Current, "control-plane-components.yaml")), true},
		{"variables outside the CRDs only", fmt.Sprintf(crd, "plain") + deployment, true},
		{"a variable in a CRD", fmt.Sprintf(crd, "'set by ${WIDGET_MODE:=fast}'") + deployment, false},
		{"an escaped variable in a CRD", fmt.Sprintf(crd, "'write $${VAR} for a literal'") + deployment, false},
		{"a double dollar in a CRD", fmt.Sprintf(crd, "'Double $$ are reduced'"), true},
		{"a variable in a CRD's key", strings.Replace(fmt.Sprintf(crd, "plain"), "type: object", "type: object\n        x-${KEY}: 1", 1), false},
		{"a lone dollar", fmt.Sprintf(crd, "'matches ^a$'"), true},
		{"no CRD", deployment, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := clusterctl.Decode([]byte(tt.components))
			if err != nil {
				t.Fatal(err)
			}
			if got := c.CRDsSubstitutionFree(); got != tt.want {
				t.Errorf("CRDsSubstitutionFree() = %v, want %v", got, tt.want)
			}
		})
	}
}

// Cluster API Provider AWS (v2.13.0's infrastructure-components.yaml)
// writes an annotation whose key and value are one substitution, which
// Flux, substituting the object's YAML as a whole, parses:
// ${AWS_CONTROLLER_IAM_ROLE/#arn/eks.amazonaws.com/role-arn: arn}.
func TestParseVariablesAcrossKeyAndValue(t *testing.T) {
	data := []byte(`apiVersion: v1
kind: ServiceAccount
metadata:
  annotations:
    ${AWS_CONTROLLER_IAM_ROLE/#arn/eks.amazonaws.com/role-arn: arn}
  name: capa-controller-manager
  namespace: capa-system
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: capa-controller-manager
  namespace: capa-system
  annotations:
    iam.amazonaws.com/role: ${AWS_CONTROLLER_IAM_ROLE:=""}
`)
	got, err := clusterctl.ParseVariables(data)
	if err != nil {
		t.Fatalf("ParseVariables: %v", err)
	}
	want := []clusterctl.Variable{{Name: "AWS_CONTROLLER_IAM_ROLE"}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("ParseVariables = %+v, want %+v (required: the pattern replacement needs a value)", got, want)
	}
}
