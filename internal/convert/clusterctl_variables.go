package convert

import (
	"fmt"
	"regexp"
	"strings"

	"go.yaml.in/yaml/v3"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/capwright/capwright/internal/clusterctl"
)

// templateContainer is what a release's Deployment template says of one
// container: its image and the strings that may hold ${VAR}s, by where
// they are (an arg by its flag, an env var by its name).
type templateContainer struct {
	image string
	args  map[string]string
	env   map[string]string
}

type templateDeployment struct {
	containers map[string]templateContainer
}

// templateDeployments reads the Deployments of a components file, by name.
func templateDeployments(components []byte) (map[string]templateDeployment, error) {
	c, err := clusterctl.Decode(components)
	if err != nil {
		return nil, err
	}
	out := map[string]templateDeployment{}
	for _, u := range c.Deployments() {
		containers, _, _ := unstructured.NestedSlice(u.Object, "spec", "template", "spec", "containers")
		td := templateDeployment{containers: map[string]templateContainer{}}
		for _, ct := range containers {
			m, ok := ct.(map[string]any)
			if !ok {
				continue
			}
			name, _ := m["name"].(string)
			tc := templateContainer{args: map[string]string{}, env: map[string]string{}}
			tc.image, _ = m["image"].(string)
			args, _, _ := unstructured.NestedStringSlice(m, "args")
			for _, a := range args {
				tc.args[flagKey(a)] = a
			}
			env, _, _ := unstructured.NestedSlice(m, "env")
			for _, e := range env {
				em, _ := e.(map[string]any)
				n, _ := em["name"].(string)
				if v, ok := em["value"].(string); ok && n != "" {
					tc.env[n] = v
				}
			}
			td.containers[name] = tc
		}
		out[u.GetName()] = td
	}
	return out, nil
}

// flagKey is an argument's flag, "--feature-gates" of
// "--feature-gates=A=true"; an argument without a value is its own key.
func flagKey(arg string) string {
	k, _, _ := strings.Cut(arg, "=")
	return k
}

// observation is where a variable's running value shows, and whether it
// is the release's default.
type observation struct {
	where     string
	isDefault bool
}

// checkVariables names the clusterctl variables of the installed release
// whose values the Capwright CR must be given: those without a default
// (clusterctl had a value), and those whose running value, read back from
// the provider's Deployments through the release's ${VAR} templates,
// differs from the default. Values are compared, never printed. It
// returns the names to put in the configSecret.
func checkVariables(in *InventoryProvider, fs *findings) []string {
	vars, err := clusterctl.ParseVariables(in.Components)
	if err != nil {
		fs.attention("variables", "the components file of %s could not be read for its variables: %v; check them by hand", in.Version, err)
		return nil
	}
	if len(vars) == 0 {
		return nil
	}
	seen := observe(in)
	var needed, unchecked []string
	for _, v := range vars {
		obs, found := seen[v.Name]
		switch {
		case !v.HasDefault && found:
			needed = append(needed, v.Name)
			fs.attention("variables."+v.Name, "has no default in the release: clusterctl was given a value (environment or clusterctl.yaml), which shows in %s. Give the same value as key %s of the configSecret", obs.where, v.Name)
		case !v.HasDefault:
			needed = append(needed, v.Name)
			fs.attention("variables."+v.Name, "has no default in the release: clusterctl was given a value (environment or clusterctl.yaml); it went into objects other than the Deployments (e.g. a Secret), which were not read. Give the same value as key %s of the configSecret", v.Name)
		case found && !obs.isDefault:
			needed = append(needed, v.Name)
			fs.attention("variables."+v.Name, "was given to clusterctl: %s shows a value other than the release's default (%q). Give the same value as key %s of the configSecret, or Flux would set the default", obs.where, v.Default, v.Name)
		case !found:
			unchecked = append(unchecked, v.Name)
		}
	}
	if len(unchecked) > 0 {
		fs.note("variables", "the release also uses %s, with defaults, outside the provider's Deployment arguments and env (or where they could not be matched): if clusterctl was given any of them, give the same values in the configSecret", strings.Join(unchecked, ", "))
	}
	return needed
}

// observe matches every ${VAR} template of the release's Deployments
// (container args and env values) against the running Deployments of the
// same names and returns, per variable, where its value shows and whether
// it is the default.
func observe(in *InventoryProvider) map[string]observation {
	tpl, err := templateDeployments(in.Components)
	if err != nil {
		return nil
	}
	out := map[string]observation{}
	record := func(where, template, running string) {
		values, ok := matchTemplate(template, running)
		if !ok {
			return
		}
		for _, v := range values {
			prev, seen := out[v.name]
			isDefault := v.hasDefault && v.value == v.defaultValue
			if seen && !prev.isDefault {
				continue // keep the first place that shows a set value
			}
			if !seen || !isDefault {
				out[v.name] = observation{where: where, isDefault: isDefault}
			}
		}
	}
	for _, d := range in.Deployments {
		t, ok := tpl[d.Name]
		if !ok {
			continue
		}
		for _, c := range d.Spec.Template.Spec.Containers {
			tc, ok := t.containers[c.Name]
			if !ok {
				continue
			}
			for _, a := range c.Args {
				if tmpl, ok := tc.args[flagKey(a)]; ok && strings.Contains(tmpl, "${") {
					record(fmt.Sprintf("Deployment %s/%s, container %s, argument %s", d.Namespace, d.Name, c.Name, flagKey(a)), tmpl, a)
				}
			}
			for _, e := range c.Env {
				if tmpl, ok := tc.env[e.Name]; ok && strings.Contains(tmpl, "${") && envValueSet(e) {
					record(fmt.Sprintf("Deployment %s/%s, container %s, env %s", d.Namespace, d.Name, c.Name, e.Name), tmpl, e.Value)
				}
			}
		}
	}
	return out
}

func envValueSet(e corev1.EnvVar) bool { return e.ValueFrom == nil }

// templateValue is one variable's value read back from a rendered string.
type templateValue struct {
	name, value, defaultValue string
	hasDefault                bool
}

// variableRef matches the variable forms whose value can be read back:
// ${VAR}, ${VAR:=d}, ${VAR:-d}, ${VAR=d} and ${VAR-d}, with a default free
// of nested variables.
var variableRef = regexp.MustCompile(`\$\{([A-Za-z_][A-Za-z0-9_]*)(?:(:?[=-])([^${}]*))?\}`)

// matchTemplate reads the values of the variables of template back from
// running, the template rendered. ok is false when running is not a
// rendering of template or the template uses forms that cannot be read
// back (string operations, nested defaults).
func matchTemplate(template, running string) ([]templateValue, bool) {
	refs := variableRef.FindAllStringSubmatchIndex(template, -1)
	if len(refs) == 0 {
		return nil, false
	}
	var pattern strings.Builder
	pattern.WriteString("^")
	var vars []templateValue
	last := 0
	for _, r := range refs {
		literal := template[last:r[0]]
		if strings.Contains(literal, "${") {
			return nil, false // a form variableRef does not read
		}
		pattern.WriteString(regexp.QuoteMeta(literal))
		pattern.WriteString("(.*?)")
		v := templateValue{name: template[r[2]:r[3]]}
		if r[4] >= 0 {
			v.hasDefault = true
			v.defaultValue = template[r[6]:r[7]]
		}
		vars = append(vars, v)
		last = r[1]
	}
	if strings.Contains(template[last:], "${") {
		return nil, false
	}
	if len(vars) == 1 && vars[0].hasDefault && refs[0][0] == 0 && refs[0][1] == len(template) {
		// The reference is the whole YAML value (value: ${VAR:=""}):
		// clusterctl substitutes the text, then the YAML is read, so the
		// default becomes the value it is written as.
		vars[0].defaultValue = yamlScalar(vars[0].defaultValue)
	}
	pattern.WriteString(regexp.QuoteMeta(template[last:]))
	pattern.WriteString("$")
	re, err := regexp.Compile(pattern.String())
	if err != nil {
		return nil, false
	}
	m := re.FindStringSubmatch(running)
	if m == nil {
		return nil, false
	}
	for i := range vars {
		vars[i].value = m[i+1]
	}
	// A variable used twice must read the same both times.
	first := map[string]string{}
	for _, v := range vars {
		if prev, ok := first[v.name]; ok && prev != v.value {
			return nil, false
		}
		first[v.name] = v.value
	}
	return vars, true
}

// yamlScalar is the string a YAML scalar written as text reads as: ""
// is the empty string, "a" and 'a' are a, an empty or null scalar is
// absent (the empty string). Text that is not one scalar stays as it is.
func yamlScalar(text string) string {
	var doc yaml.Node
	if err := yaml.Unmarshal([]byte(text), &doc); err != nil {
		return text
	}
	if doc.Kind == 0 {
		return "" // no document: an empty value
	}
	if doc.Kind != yaml.DocumentNode || len(doc.Content) != 1 || doc.Content[0].Kind != yaml.ScalarNode {
		return text
	}
	n := doc.Content[0]
	if n.Tag == "!!null" {
		return ""
	}
	return n.Value
}
