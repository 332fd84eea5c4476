package main

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/pmezard/go-difflib/difflib"
	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/dynamic"
	ctrl "sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/capwright/capwright/api/providers/v1alpha1"
	"github.com/capwright/capwright/internal/build"
	"github.com/capwright/capwright/internal/fluxobjects"
	"github.com/capwright/capwright/internal/plan"
)

func init() { subcommands = append(subcommands, newDiffCommand) }

// exitDiffFailed: diff could not compare, for a reason not covered by
// codes 2–6 (1 means it found differences).
const exitDiffFailed = 9

// differencesError is diff finding differences: exit code 1, as kubectl
// diff.
type differencesError struct{ n int }

func (e differencesError) Error() string {
	if e.n == 1 {
		return "1 object would change"
	}
	return fmt.Sprintf("%d objects would change", e.n)
}

// diffFailedError is a failure of diff not covered by codes 2–6.
type diffFailedError struct{ err error }

func (e diffFailedError) Error() string { return e.err.Error() }
func (e diffFailedError) Unwrap() error { return e.err }

type diffOptions struct {
	buildOptions
	cluster clusterOptions
}

func newDiffCommand(reg *registryOptions) *cobra.Command {
	o := &diffOptions{}
	cmd := &cobra.Command{
		Use:   "diff -f FILE|DIR... [--cluster-file FILE|DIR...]",
		Short: "Show what the Capwright manager would change on a cluster for the custom resources in files",
		Long: `diff builds the custom resources in the files as capwright build does —
with what the cluster says in place of what build fills in: the custom
resources' status, the Cluster API Clusters and their kubeconfig Secrets (names
only), the Flux objects the manager keeps — and shows, as a unified diff
readable in a pull request's comment, what applying each object would change
on the cluster: a server-side dry-run apply with the manager's field manager
(capwright), against the live object. Objects the manager would create show as
added, objects it would prune as removed. Nothing is written.

The kubeconfig's user needs get and list on what is read and patch on what is
dry-run applied (a dry run is authorized as the write it stands for).

Exit codes: 0 nothing would change; 1 something would change (as kubectl
diff); 2 the input cannot be read; 3 the cluster does not serve Capwright's
kinds; 4, 5 as for the other commands; 8 the
manager would refuse a custom resource; 9 diff could not compare, for another
reason.`,
		Example: `  # In a pull request's CI job, with the management cluster's kubeconfig
  capwright diff -f clusters/management/ --kubeconfig mgmt.kubeconfig > capwright.diff; test $? -le 1`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runDiff(cmd, reg, o)
		},
	}
	f := cmd.Flags()
	f.StringArrayVarP(&o.files, "filename", "f", nil, "file or directory (walked for *.yaml, *.yml, *.json) holding the custom resources (repeatable)")
	f.StringArrayVar(&o.clusterFiles, "cluster-file", nil, "file or directory of further objects to read as the cluster's (repeatable)")
	f.StringVarP(&o.namespace, "namespace", "n", "default", "namespace of the objects in the files that name none")
	addLayoutFlag(cmd, &o.layouts)
	o.settings.addFlags(cmd)
	o.cluster.addFlags(cmd, "")
	_ = cmd.MarkFlagRequired("filename")
	_ = cmd.MarkFlagFilename("filename", "yaml", "yml", "json")
	_ = cmd.MarkFlagFilename("cluster-file", "yaml", "yml", "json")
	return cmd
}

func runDiff(cmd *cobra.Command, reg *registryOptions, o *diffOptions) error {
	ctx := cmd.Context()
	opts, err := o.settings.options(reg)
	if err != nil {
		return err
	}
	opts.Layouts = o.layouts
	in, err := loadInput(o.files, o.clusterFiles, o.namespace)
	if err != nil {
		return err
	}
	c, name, err := o.cluster.client()
	if err != nil {
		return err
	}
	cfg, _, err := o.cluster.restConfig()
	if err != nil {
		return err
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return diffFailedError{err}
	}
	live, err := build.LiveWorld(ctx, c, in.CRs)
	if err != nil {
		if fluxobjects.NotServed(err) {
			return &notInstalledError{context: name, missing: []string{"coreproviders." + v1alpha1.GroupVersion.Group}}
		}
		return diffFailedError{fmt.Errorf("reading context %q: %w", name, err)}
	}
	items, err := build.Build(ctx, in.CRs, append(in.World, live...), opts)
	if err != nil {
		return withOfflineHint(err)
	}
	report(cmd.ErrOrStderr(), in, items)
	changed := 0
	for _, it := range items {
		n, err := diffItem(ctx, cmd.OutOrStdout(), c, dyn, it)
		if err != nil {
			return diffFailedError{fmt.Errorf("%s: %w", it.Ref(), err)}
		}
		changed += n
	}
	if err := buildOutcome(in, items); err != nil {
		return err
	}
	if changed > 0 {
		return differencesError{changed}
	}
	return nil
}

// diffItem prints what applying it's objects, and pruning its Prune,
// would change, and returns how many would.
func diffItem(ctx context.Context, w io.Writer, c ctrl.Client, dyn dynamic.Interface, it build.Item) (int, error) {
	changed := 0
	for _, want := range it.Objects {
		gvk := want.GroupVersionKind()
		m, err := c.RESTMapper().RESTMapping(gvk.GroupKind(), gvk.Version)
		if err != nil {
			return changed, err
		}
		var res dynamic.ResourceInterface = dyn.Resource(m.Resource)
		if want.GetNamespace() != "" {
			res = dyn.Resource(m.Resource).Namespace(want.GetNamespace())
		}
		before, err := res.Get(ctx, want.GetName(), metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			before = nil
		} else if err != nil {
			return changed, err
		}
		after, err := res.Apply(ctx, want.GetName(), want, metav1.ApplyOptions{FieldManager: plan.FieldOwner, Force: true, DryRun: []string{metav1.DryRunAll}})
		switch {
		case err != nil && before == nil && apierrors.IsNotFound(err):
			// Its namespace is new too (written before it, which a dry
			// run does not do): shown as built.
			after = want
		case err != nil:
			return changed, fmt.Errorf("dry-run applying %s %s: %w", want.GetKind(), plan.ObjectRef(want), err)
		}
		n, err := printDiff(w, want, before, after)
		if err != nil {
			return changed, err
		}
		changed += n
	}
	for _, p := range it.Prune {
		u, err := toUnstructured(c, p)
		if err != nil {
			return changed, err
		}
		n, err := printDiff(w, u, u, nil)
		if err != nil {
			return changed, err
		}
		changed += n
	}
	return changed, nil
}

// printDiff prints a unified diff of an object from before to after (nil:
// absent), server-set metadata aside; it returns 1 when they differ.
func printDiff(w io.Writer, ref *unstructured.Unstructured, before, after *unstructured.Unstructured) (int, error) {
	a, err := comparable(before)
	if err != nil {
		return 0, err
	}
	b, err := comparable(after)
	if err != nil {
		return 0, err
	}
	if a == b {
		return 0, nil
	}
	path := strings.ToLower(ref.GetKind()) + "/"
	if ref.GetNamespace() != "" {
		path += ref.GetNamespace() + "/"
	}
	path += ref.GetName()
	text, err := difflib.GetUnifiedDiffString(difflib.UnifiedDiff{
		A: lines(a), B: lines(b),
		FromFile: "live/" + path, ToFile: "capwright/" + path, Context: 3,
	})
	if err != nil {
		return 0, err
	}
	_, err = io.WriteString(w, text)
	return 1, err
}

// comparable is the YAML of obj without what the API server and
// controllers set (managedFields, resourceVersion, generation, uid,
// creationTimestamp, status); "" for nil.
func comparable(obj *unstructured.Unstructured) (string, error) {
	if obj == nil {
		return "", nil
	}
	u := obj.DeepCopy()
	delete(u.Object, "status")
	for _, f := range []string{"managedFields", "resourceVersion", "generation", "uid", "creationTimestamp"} {
		unstructured.RemoveNestedField(u.Object, "metadata", f)
	}
	data, err := yaml.Marshal(u.Object)
	return string(data), err
}

// lines splits text into lines for a diff; an absent object has none.
func lines(text string) []string {
	if text == "" {
		return nil
	}
	return difflib.SplitLines(text)
}

// toUnstructured is obj with its kind, by c's scheme.
func toUnstructured(c ctrl.Client, obj plan.Object) (*unstructured.Unstructured, error) {
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return nil, err
	}
	u := &unstructured.Unstructured{Object: m}
	gvks, _, err := c.Scheme().ObjectKinds(obj)
	if err != nil || len(gvks) == 0 {
		return nil, fmt.Errorf("the kind of %T: %v", obj, err)
	}
	u.SetGroupVersionKind(gvks[0])
	return u, nil
}
