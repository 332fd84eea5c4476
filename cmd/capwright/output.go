package main

import (
	"encoding/json"
	"fmt"
	"io"

	"sigs.k8s.io/yaml"
)

// printData prints v as output asks when that is a data format, json
// (indented) or yaml, and tells whether it did; any other output is the
// command's own (a table, a tree).
func printData(w io.Writer, output string, v any) (bool, error) {
	var data []byte
	var err error
	switch output {
	case "json":
		data, err = json.MarshalIndent(v, "", "  ")
		data = append(data, '\n')
	case "yaml":
		data, err = yaml.Marshal(v)
	default:
		return false, nil
	}
	if err != nil {
		return true, fmt.Errorf("printing %s: %w", output, err)
	}
	_, err = w.Write(data)
	return true, err
}
