package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/capwright/capwright/internal/convert"
)

func init() { subcommands = append(subcommands, newConvertCommand) }

type convertOptions struct {
	files        []string
	output       string
	report       string
	reportFormat string
	fromCluster  bool
	cluster      clusterOptions
	release      releaseOptions
}

func newConvertCommand(*registryOptions) *cobra.Command {
	o := &convertOptions{}
	cmd := &cobra.Command{
		Use:   "convert (-f FILE|DIR|- ... | --from-cluster) [--output DIR] [--report FILE]",
		Short: "Convert cluster-api-operator provider CRs into Capwright provider CRs, reporting what needs a human",
		Long: `convert reads cluster-api-operator provider CRs (operator.cluster.x-k8s.io/v1alpha2:
CoreProvider, BootstrapProvider, ControlPlaneProvider, InfrastructureProvider,
AddonProvider, IPAMProvider, RuntimeExtensionProvider) and writes the
equivalent Capwright CRs (providers.capwright.io/v1alpha1): same kind, name
and namespace (both install a provider into its CR's namespace).

Input: -f FILE, a directory (its .yaml, .yml and .json files, not
recursing) or - for stdin, repeatable; multi-document YAML and Kubernetes
Lists (kubectl get -o yaml) are read. --from-cluster reads the operator's
CRs from the cluster of the current kubeconfig context instead (--kubeconfig,
--context), and clusterctl's inventory (providers.clusterctl.cluster.x-k8s.io):
each provider clusterctl installed becomes a Capwright CR at the installed
version, in the namespace it runs in. To name the clusterctl variables it was
installed with, the converter reads the provider's Deployments and the
components file of that version from the release the catalog names (the
--release-* flags reach it, e.g. --release-mirror for a mirror). Documents
of other kinds are left out and noted; a Secret's content is never read, a
variable's value never printed.

Output: the Capwright CRs on stdout, or one file per provider,
DIR/NAMESPACE/TYPE-NAME.yaml, with --output DIR. Each starts with comments
naming the operator CR it came from and the fields that need attention.

The report (stderr, or --report FILE; --report-format json for scripts)
lists, per CR, every field that has no equivalent or needs a human
("attention") and every field converted with a difference worth knowing
("note"), with what to do. Fields the operator's API does not have are
reported, never silently dropped. The field-by-field table is in
docs/migrate.md.

Exit codes: 0 converted, nothing needs attention; 7 converted, but some
fields need attention (read the report before applying); 2 unreadable
input or no operator provider CR in it; 1 the cluster could not be read.`,
		Example: `  # Convert the CRs of a GitOps repository, one file per provider
  capwright convert -f clusters/mgmt/capi-operator/ --output clusters/mgmt/capwright/

  # Convert what runs in the cluster, and keep the report
  capwright convert --from-cluster --report convert-report.txt > providers.yaml

  # From kubectl
  kubectl get coreproviders.operator.cluster.x-k8s.io -A -o yaml | capwright convert -f -`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runConvert(cmd, o)
		},
	}
	f := cmd.Flags()
	f.StringArrayVarP(&o.files, "filename", "f", nil, "file, directory or - (stdin) holding operator CRs; repeatable")
	f.StringVar(&o.output, "output", "", "write one file per provider under this directory (DIR/NAMESPACE/TYPE-NAME.yaml) instead of stdout")
	f.StringVar(&o.report, "report", "", "write the report to this file instead of stderr")
	f.StringVar(&o.reportFormat, "report-format", "text", "report format: text or json")
	f.BoolVar(&o.fromCluster, "from-cluster", false, "read the operator's provider CRs and clusterctl's inventory from the cluster (kubeconfig) instead of files")
	o.cluster.addFlags(cmd, "for --from-cluster ")
	o.release.addFlags(cmd, "the installed version (clusterctl's inventory)", "the catalog's release URL")
	return cmd
}

// attentionError ends a conversion whose output needs a human: exit code 7.
type attentionError struct{ fields, objects int }

func (e attentionError) Error() string {
	return fmt.Sprintf("%d field(s) of %d provider CR(s) need attention before the converted CRs are applied: read the report", e.fields, e.objects)
}

func runConvert(cmd *cobra.Command, o *convertOptions) error {
	switch o.reportFormat {
	case "text", "json":
	default:
		return usageErrorf("--report-format %q: choose text or json", o.reportFormat)
	}
	var (
		docs []convert.Document
		err  error
	)
	switch {
	case o.fromCluster && len(o.files) > 0:
		return usageErrorf("give either -f or --from-cluster, not both")
	case o.fromCluster:
		docs, err = readClusterDocuments(cmd.Context(), o, cmd.ErrOrStderr())
	case len(o.files) == 0:
		return usageErrorf("no input: give -f FILE|DIR|- (repeatable) or --from-cluster")
	default:
		docs, err = readDocuments(cmd.InOrStdin(), o.files)
	}
	if err != nil {
		return err
	}
	results := convert.Convert(docs)
	converted := 0
	var all []convert.Finding
	for _, r := range results {
		if r.Object != nil {
			converted++
		}
		all = append(all, r.Findings...)
	}
	if err := writeConvertReport(cmd, o, all, converted); err != nil {
		return err
	}
	if converted == 0 {
		if convert.NeedAttention(all) {
			return usageErrorf("no provider CR could be converted: see the report")
		}
		return usageErrorf("no cluster-api-operator provider CR (%s) in the input", convert.OperatorAPIVersion)
	}
	if err := writeConverted(cmd.OutOrStdout(), o.output, results); err != nil {
		return err
	}
	if convert.NeedAttention(all) {
		objects := map[string]bool{}
		fields := 0
		for _, f := range all {
			if f.Severity == convert.Attention {
				fields++
				objects[f.Object] = true
			}
		}
		return attentionError{fields: fields, objects: len(objects)}
	}
	return nil
}

// readDocuments reads every -f argument: files, directories (their YAML
// and JSON files) and - for stdin.
func readDocuments(stdin io.Reader, args []string) ([]convert.Document, error) {
	var docs []convert.Document
	for _, arg := range args {
		var files []string
		switch info, err := os.Stat(arg); {
		case arg == "-":
			data, err := io.ReadAll(stdin)
			if err != nil {
				return nil, fmt.Errorf("reading stdin: %w", err)
			}
			d, err := convert.Decode("stdin", data)
			if err != nil {
				return nil, usageError{err}
			}
			docs = append(docs, d...)
			continue
		case err != nil:
			return nil, usageErrorf("-f %s: %v", arg, err)
		case info.IsDir():
			entries, err := os.ReadDir(arg)
			if err != nil {
				return nil, usageErrorf("-f %s: %v", arg, err)
			}
			for _, e := range entries {
				ext := strings.ToLower(filepath.Ext(e.Name()))
				if e.Type().IsRegular() && (ext == ".yaml" || ext == ".yml" || ext == ".json") {
					files = append(files, filepath.Join(arg, e.Name()))
				}
			}
			if len(files) == 0 {
				return nil, usageErrorf("-f %s: the directory holds no .yaml, .yml or .json file", arg)
			}
		default:
			files = []string{arg}
		}
		for _, file := range files {
			data, err := os.ReadFile(file)
			if err != nil {
				return nil, usageErrorf("-f %s: %v", file, err)
			}
			d, err := convert.Decode(file, data)
			if err != nil {
				return nil, usageError{err}
			}
			docs = append(docs, d...)
		}
	}
	return docs, nil
}

// writeConverted writes the converted CRs to stdout, or one file each
// under dir.
func writeConverted(stdout io.Writer, dir string, results []convert.Converted) error {
	var all bytes.Buffer
	written := map[string]bool{}
	for _, r := range results {
		if r.Object == nil {
			continue
		}
		data, err := convert.Encode(r)
		if err != nil {
			return err
		}
		if dir == "" {
			if all.Len() > 0 {
				all.WriteString("---\n")
			}
			all.Write(data)
			continue
		}
		name := r.Object.ProviderType() + "-" + r.Object.GetName()
		path := filepath.Join(dir, r.Object.GetNamespace(), name+".yaml")
		for n := 2; written[path]; n++ {
			// A second CR of the same provider (reported as a duplicate).
			path = filepath.Join(dir, r.Object.GetNamespace(), fmt.Sprintf("%s.%d.yaml", name, n))
		}
		written[path] = true
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return fmt.Errorf("--output: %w", err)
		}
		if err := os.WriteFile(path, data, 0o644); err != nil { //nolint:gosec // provider CRs for a Git repository, no secrets
			return fmt.Errorf("--output: %w", err)
		}
	}
	if dir == "" {
		_, err := stdout.Write(all.Bytes())
		return err
	}
	paths := make([]string, 0, len(written))
	for p := range written {
		paths = append(paths, p)
	}
	slices.Sort(paths)
	for _, p := range paths {
		fmt.Fprintf(stdout, "wrote %s\n", p)
	}
	return nil
}

// writeConvertReport writes the findings and a summary line.
func writeConvertReport(cmd *cobra.Command, o *convertOptions, findings []convert.Finding, converted int) error {
	var b bytes.Buffer
	if o.reportFormat == "json" {
		report := struct {
			Converted int               `json:"converted"`
			Findings  []convert.Finding `json:"findings"`
		}{converted, findings}
		if report.Findings == nil {
			report.Findings = []convert.Finding{}
		}
		enc := json.NewEncoder(&b)
		enc.SetIndent("", "  ")
		if err := enc.Encode(report); err != nil {
			return err
		}
	} else {
		if err := convert.WriteReport(&b, findings); err != nil {
			return err
		}
		attention := 0
		for _, f := range findings {
			if f.Severity == convert.Attention {
				attention++
			}
		}
		fmt.Fprintf(&b, "Converted %d provider CR(s); %d field(s) need attention, %d note(s).\n", converted, attention, len(findings)-attention)
	}
	if o.report == "" {
		_, err := cmd.ErrOrStderr().Write(b.Bytes())
		return err
	}
	if err := os.WriteFile(o.report, b.Bytes(), 0o644); err != nil { //nolint:gosec // the report quotes no secret
		return fmt.Errorf("--report: %w", err)
	}
	return nil
}
