package docs

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"text/template"

	"sigs.k8s.io/yaml"
)

// renderChart renders the chart's templates as helm template would, for
// checking what the chart installs without Helm (not a dependency of this
// module): Go templates with the few Sprig functions the chart uses,
// implemented here as Sprig defines them, values.yaml under overrides, and
// .Release and .Chart. A function the chart starts using that is not
// listed here fails the render ("function not defined"): add it.
func renderChart(t *testing.T, dir, release, namespace string, overrides map[string]any) []map[string]any {
	t.Helper()
	var chart struct {
		Name       string `json:"name"`
		Version    string `json:"version"`
		AppVersion string `json:"appVersion"`
	}
	readYAML(t, filepath.Join(dir, "Chart.yaml"), &chart)
	values := map[string]any{}
	readYAML(t, filepath.Join(dir, "values.yaml"), &values)
	coalesce(values, overrides)
	top := map[string]any{
		"Values":  values,
		"Release": map[string]any{"Name": release, "Namespace": namespace, "Service": "Helm", "IsInstall": true, "IsUpgrade": false},
		"Chart":   map[string]any{"Name": chart.Name, "Version": chart.Version, "AppVersion": chart.AppVersion},
	}

	var tpl *template.Template
	tpl = template.New("chart").Option("missingkey=zero").Funcs(sprigSubset(&tpl))
	files, err := filepath.Glob(filepath.Join(dir, "templates", "*"))
	if err != nil || len(files) == 0 {
		t.Fatalf("the chart's templates: %v (%v)", files, err)
	}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := tpl.New(filepath.Base(f)).Parse(string(data)); err != nil {
			t.Fatalf("parsing %s: %v", f, err)
		}
	}
	var objects []map[string]any
	for _, f := range files {
		name := filepath.Base(f)
		if strings.HasPrefix(name, "_") {
			continue
		}
		var out strings.Builder
		if err := tpl.ExecuteTemplate(&out, name, top); err != nil {
			t.Fatalf("rendering %s: %v", name, err)
		}
		if name == "NOTES.txt" {
			continue
		}
		// As Helm does with missingkey=zero.
		rendered := strings.ReplaceAll(out.String(), "<no value>", "")
		for i, doc := range yamlDocuments(t, []byte(rendered)) {
			var o map[string]any
			if err := yaml.Unmarshal(doc, &o); err != nil {
				t.Fatalf("%s renders invalid YAML in document %d: %v\n%s", name, i+1, err, doc)
			}
			if o != nil {
				objects = append(objects, o)
			}
		}
	}
	return objects
}

func readYAML(t *testing.T, file string, into any) {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(data, into); err != nil {
		t.Fatalf("%s: %v", file, err)
	}
}

// coalesce sets overrides into values, maps merged key by key, as Helm
// merges --set and values files over the chart's values.yaml.
func coalesce(values, overrides map[string]any) {
	for k, v := range overrides {
		if sub, ok := v.(map[string]any); ok {
			if dst, ok := values[k].(map[string]any); ok {
				coalesce(dst, sub)
				continue
			}
		}
		values[k] = v
	}
}

// sprigSubset holds the Sprig functions (and Helm's include, toYaml,
// fromYaml) the chart's templates call.
func sprigSubset(tpl **template.Template) template.FuncMap {
	indent := func(n int, s string) string {
		pad := strings.Repeat(" ", n)
		return pad + strings.ReplaceAll(s, "\n", "\n"+pad)
	}
	return template.FuncMap{
		"include": func(name string, data any) (string, error) {
			var b strings.Builder
			err := (*tpl).ExecuteTemplate(&b, name, data)
			return b.String(), err
		},
		"toYaml": func(v any) string {
			out, err := yaml.Marshal(v)
			if err != nil {
				return ""
			}
			return strings.TrimSuffix(string(out), "\n")
		},
		"fromYaml": func(s string) map[string]any {
			m := map[string]any{}
			if err := yaml.Unmarshal([]byte(s), &m); err != nil {
				m["Error"] = err.Error()
			}
			return m
		},
		"indent":  indent,
		"nindent": func(n int, s string) string { return "\n" + indent(n, s) },
		"quote": func(vs ...any) string {
			var out []string
			for _, v := range vs {
				if v != nil {
					out = append(out, strconv.Quote(fmt.Sprint(v)))
				}
			}
			return strings.Join(out, " ")
		},
		"default": func(d any, given ...any) any {
			if len(given) == 0 || isEmpty(given[0]) {
				return d
			}
			return given[0]
		},
		"trunc": func(n int, s string) string {
			if n >= 0 && len(s) > n {
				return s[:n]
			}
			if n < 0 && len(s) > -n {
				return s[len(s)+n:]
			}
			return s
		},
		"trimSuffix": func(suffix, s string) string { return strings.TrimSuffix(s, suffix) },
		"contains":   func(substr, s string) bool { return strings.Contains(s, substr) },
		"replace":    func(old, new, s string) string { return strings.ReplaceAll(s, old, new) },
		"fail":       func(msg string) (string, error) { return "", errors.New(msg) },
		"int": func(v any) (int, error) {
			switch v := v.(type) {
			case int:
				return v, nil
			case int64:
				return int(v), nil
			case float64:
				return int(v), nil
			case string:
				return strconv.Atoi(v)
			case nil:
				return 0, nil
			}
			return 0, fmt.Errorf("int: %T", v)
		},
		// Sprig's merge (mergo without override): keys of dst win; maps
		// are merged key by key.
		"merge": func(dst map[string]any, srcs ...map[string]any) map[string]any {
			for _, src := range srcs {
				mergeMissing(dst, src)
			}
			return dst
		},
	}
}

func mergeMissing(dst, src map[string]any) {
	for k, v := range src {
		existing, ok := dst[k]
		if !ok || existing == nil {
			dst[k] = v
			continue
		}
		if a, ok := existing.(map[string]any); ok {
			if b, ok := v.(map[string]any); ok {
				mergeMissing(a, b)
			}
		}
	}
}

// isEmpty is Sprig's empty.
func isEmpty(v any) bool {
	if v == nil {
		return true
	}
	rv := reflect.ValueOf(v)
	switch rv.Kind() {
	case reflect.String, reflect.Map, reflect.Slice, reflect.Array:
		return rv.Len() == 0
	case reflect.Bool:
		return !rv.Bool()
	case reflect.Int, reflect.Int64, reflect.Int32:
		return rv.Int() == 0
	case reflect.Float64, reflect.Float32:
		return rv.Float() == 0
	case reflect.Pointer, reflect.Interface:
		return rv.IsNil()
	}
	return false
}
