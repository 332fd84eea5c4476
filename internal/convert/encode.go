package convert

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"sigs.k8s.io/yaml"
)

// Encode writes a converted CR as YAML, headed by comments naming the
// operator CR or clusterctl inventory object it came from and the fields that need attention, so a
// reviewer of the file sees them. Status and server-set metadata are left
// out.
func Encode(c Converted) ([]byte, error) {
	if c.Object == nil {
		return nil, fmt.Errorf("%s was not converted", c.Document.Label())
	}
	data, err := json.Marshal(c.Object)
	if err != nil {
		return nil, fmt.Errorf("encoding %s: %w", c.Document.Label(), err)
	}
	var obj map[string]any
	if err := json.Unmarshal(data, &obj); err != nil {
		return nil, err
	}
	delete(obj, "status")
	if meta, ok := obj["metadata"].(map[string]any); ok {
		delete(meta, "creationTimestamp")
	}
	body, err := yaml.Marshal(obj)
	if err != nil {
		return nil, fmt.Errorf("encoding %s: %w", c.Document.Label(), err)
	}
	var b bytes.Buffer
	fmt.Fprintf(&b, "# Converted by capwright convert from %s %s.\n", c.Document.APIVersion, c.Document.Label())
	var fields []string
	for _, f := range c.Findings {
		if f.Severity == Attention && !slices.Contains(fields, f.Field) {
			fields = append(fields, f.Field)
		}
	}
	if len(fields) > 0 {
		fmt.Fprintf(&b, "# Needs attention before it is applied (see the report): %s.\n", strings.Join(fields, ", "))
	}
	b.Write(body)
	return b.Bytes(), nil
}
