package hcpsim

import (
	"embed"
	"io/fs"
)

// The hosted-control-plane test chart: one SimulatedControlPlane named
// after the release, its kubeconfig Secret <release>-admin-kubeconfig.
// Its values.schema.json requires version (vX.Y.Z) and rejects unknown
// keys, so a test makes Helm refuse the values by passing a bad version or
// an extra key.
const (
	ChartName    = "hosted-control-plane"
	ChartVersion = "0.1.0"
)

//go:embed all:chart
var chart embed.FS

// ChartFiles returns the chart's files by path relative to the chart root
// (Chart.yaml, values.yaml, values.schema.json, templates/…), the input of
// the e2e framework's PushChart.
func ChartFiles() map[string][]byte {
	root, err := fs.Sub(chart, "chart")
	if err != nil {
		panic(err) // the embedded tree is fixed at build time
	}
	files := map[string][]byte{}
	err = fs.WalkDir(root, ".", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := fs.ReadFile(root, path)
		files[path] = data
		return err
	})
	if err != nil {
		panic(err)
	}
	return files
}
