package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/term"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	ctrl "sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/capwright/capwright/internal/scheme"
	"github.com/capwright/capwright/internal/status"
)

func init() { subcommands = append(subcommands, newStatusCommand) }

// statusPollInterval is how often --watch reads the tree again: the
// Flux objects change on Flux's schedule, and a few list calls every two
// seconds cost the API server little.
const statusPollInterval = 2 * time.Second

// statusRequestTimeout bounds each request to the API server: one that
// hangs fails the command (or, with --watch, is tried again) instead of
// holding it forever.
const statusRequestTimeout = 30 * time.Second

type statusOptions struct {
	cluster    clusterOptions
	output     string
	namespace  string
	watch      bool
	untilReady bool
	timeout    time.Duration
}

var statusOutputs = []string{"tree", "yaml", "json"}

func newStatusCommand(_ *registryOptions) *cobra.Command {
	o := &statusOptions{}
	cmd := &cobra.Command{
		Use:   "status [KIND/NAME]",
		Short: "Show Capwright's objects, the Flux objects they made, what Flux applied, and their health",
		Long: `status reads the management cluster and shows a tree, like "flux tree
kustomization" and "clusterctl describe cluster":

  - each provider (CoreProvider, BootstrapProvider, …), Tenant,
    CapwrightControlPlane and CapwrightCluster, with its Ready condition;
  - under it, the Flux objects Capwright wrote for it (OCIRepository or
    ExternalArtifact, Kustomization or HelmRelease), with theirs;
  - under each Kustomization or HelmRelease, what Flux applied (its
    status.inventory) with its health as kstatus computes it, the check
    Flux's own health checks use; a HelmRelease also shows its chart and
    Helm release from status.history;
  - for a Tenant, a line per cluster (status.clusters: phase, wave and
    stack revision with spec.rollout) with that cluster's Flux objects.
    What Flux applied on a workload cluster is listed but its health is
    not read: it lives on that cluster.

With no argument it shows everything Capwright manages; KIND/NAME shows one
object (kinds in any case, plural or short: coreprovider/cluster-api,
corep/cluster-api, tenant/team-a). A namespaced object is looked up in -n,
or in every namespace when -n is not given (two namespaces having it is an
error asking for -n).

-o yaml and -o json print the same tree as data. --watch reads the tree
again every 2 seconds and prints it when it changes, until interrupted,
or with --until-ready until everything shown is Ready (for a script
waiting for an upgrade to land, with --timeout); a read that fails (an
API server restarting) is noted on stderr and tried again.

Exit codes: 0 everything shown is Ready; 8 something shown is not Ready
(with --watch: at the end); 3 KIND/NAME not found, or the cluster does
not serve Capwright's kinds (Capwright not installed); 2 bad arguments;
4 the API server refused the credentials; 5 the cluster is unreachable.`,
		Example: `  capwright status
  capwright status coreprovider/cluster-api -n capi-system
  capwright status tenant/team-a -o yaml

  # Wait for everything to be Ready, at most ten minutes
  capwright status --watch --until-ready --timeout 10m`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runStatus(cmd, o, args)
		},
		ValidArgsFunction: func(cmd *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
			if len(args) > 0 {
				return nil, cobra.ShellCompDirectiveNoFileComp
			}
			return completeStatusArg(cmd.Context(), o, toComplete)
		},
	}
	f := cmd.Flags()
	o.cluster.addFlags(cmd, "")
	f.StringVarP(&o.output, "output", "o", "tree", "output format: tree, yaml or json")
	f.StringVarP(&o.namespace, "namespace", "n", "", "namespace of KIND/NAME (default: every namespace); with no argument, show only this namespace's objects (Tenants are cluster-scoped: not shown)")
	f.BoolVarP(&o.watch, "watch", "w", false, "print the tree again whenever it changes, until interrupted")
	f.BoolVar(&o.untilReady, "until-ready", false, "with --watch: stop, exit code 0, once everything shown is Ready")
	f.DurationVar(&o.timeout, "timeout", 0, "with --watch: stop after this long (exit code 8 if something is still not Ready); 0: no limit")
	_ = cmd.RegisterFlagCompletionFunc("output", cobra.FixedCompletions(statusOutputs, cobra.ShellCompDirectiveNoFileComp))
	return cmd
}

func runStatus(cmd *cobra.Command, o *statusOptions, args []string) error {
	if !slices.Contains(statusOutputs, o.output) {
		return usageErrorf("-o %q: choose tree, yaml or json", o.output)
	}
	if (o.untilReady || o.timeout != 0) && !o.watch {
		return usageErrorf("--until-ready and --timeout go with --watch")
	}
	sel := status.Selection{Namespace: o.namespace}
	if len(args) == 1 {
		k, name, err := parseStatusArg(args[0])
		if err != nil {
			return err
		}
		if !k.Namespaced && o.namespace != "" {
			return usageErrorf("%s is cluster-scoped: drop -n %s", k.Kind, o.namespace)
		}
		sel.Kind, sel.Name = &k, name
	}
	c, name, err := o.cluster.statusClient(statusRequestTimeout)
	if err != nil {
		return err
	}
	g := &statusGatherer{gatherer: status.Gatherer{Client: c}, context: name, warn: cmd.ErrOrStderr()}
	ctx := cmd.Context()
	if !o.watch {
		report, err := g.gather(ctx, sel)
		if err != nil {
			return kubeError(err)
		}
		if err := printStatus(cmd.OutOrStdout(), o.output, report); err != nil {
			return err
		}
		return readyOrNot(report)
	}
	return watchStatus(ctx, cmd.OutOrStdout(), o, g, sel)
}

// statusGatherer reads the tree (internal/status) for the command: its
// notes go to warn, its errors become the command's.
type statusGatherer struct {
	gatherer status.Gatherer
	// context names the cluster in errors.
	context string
	// warn gets notes on what could not be shown (a kind the cluster does
	// not serve).
	warn io.Writer
}

func (g *statusGatherer) gather(ctx context.Context, sel status.Selection) (*status.Report, error) {
	r, err := g.gatherer.Gather(ctx, sel)
	var (
		uninstalled *status.NotInstalledError
		ambiguous   *status.AmbiguousError
	)
	switch {
	case errors.As(err, &uninstalled):
		return nil, &notInstalledError{context: g.context, missing: uninstalled.Missing}
	case errors.As(err, &ambiguous):
		return nil, usageErrorf("%s %s exists in namespaces %s: pick one with -n, e.g. -n %s",
			ambiguous.Kind, ambiguous.Name, strings.Join(ambiguous.Namespaces, ", "), ambiguous.Namespaces[0])
	case err != nil:
		return nil, err
	}
	for _, note := range r.Notes {
		fmt.Fprintf(g.warn, "Note: %s\n", note)
	}
	return r, nil
}

// watchStatus prints the tree whenever it changes: on a terminal in
// place, elsewhere one after the other.
func watchStatus(ctx context.Context, out io.Writer, o *statusOptions, g *statusGatherer, sel status.Selection) error {
	if o.timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, o.timeout)
		defer cancel()
	}
	tty := isTerminal(out)
	var (
		last    []byte
		result  error
		shown   bool
		failing string
	)
	for {
		report, err := g.gather(ctx, sel)
		switch {
		case err != nil && ctx.Err() != nil:
			if !shown {
				return kubeError(err)
			}
			return result
		case err != nil && shown && transient(err):
			// An API server restarting (an upgrade of the management
			// cluster) should not end a watch: say so once, read again.
			if err.Error() != failing {
				fmt.Fprintf(g.warn, "Note: reading the tree failed, trying again every %s: %v\n", statusPollInterval, err)
				failing = err.Error()
			}
		case err != nil:
			return kubeError(err)
		}
		if err != nil {
			select {
			case <-ctx.Done():
				return result
			case <-time.After(statusPollInterval):
			}
			continue
		}
		failing = ""
		var buf bytes.Buffer
		if err := printStatus(&buf, o.output, report); err != nil {
			return err
		}
		if !bytes.Equal(buf.Bytes(), last) {
			var sep string
			switch {
			case tty:
				sep = "\x1b[H\x1b[2J" // home, clear: redraw in place
			case shown && o.output == "yaml":
				sep = "---\n"
			case shown && o.output == "tree":
				sep = "\n"
			}
			if _, err := io.WriteString(out, sep+buf.String()); err != nil {
				return err
			}
			last, shown = buf.Bytes(), true
		}
		result = readyOrNot(report)
		if o.untilReady && result == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return result
		case <-time.After(statusPollInterval):
		}
	}
}

// transient tells whether a failed read of the tree may pass: anything
// but the selected object or Capwright's kinds being gone, or refused
// credentials.
func transient(err error) bool {
	var (
		absent      *status.NotFoundError
		uninstalled *notInstalledError
		usage       usageError
	)
	return !errors.As(err, &absent) && !errors.As(err, &uninstalled) && !errors.As(err, &usage) && !isKubeAuthError(err)
}

func readyOrNot(r *status.Report) error {
	if r.Ready {
		return nil
	}
	return notReadyError{&notReadyObjects{objects: r.NotReady()}}
}

func printStatus(w io.Writer, output string, r *status.Report) error {
	if printed, err := printData(w, output, r); printed {
		return err
	}
	if len(r.Objects) == 0 {
		_, err := fmt.Fprintln(w, "No Capwright objects found.")
		return err
	}
	return printStatusTree(w, r)
}

// statusClient connects to the cluster the flags name with Capwright's
// scheme, allowed more requests per second than client-go's default (5):
// the tree reads every applied object, as kubectl get would with -A.
// timeout bounds each request.
func (o *clusterOptions) statusClient(timeout time.Duration) (ctrl.Client, string, error) {
	cfg, name, err := o.restConfig()
	if err != nil {
		return nil, "", err
	}
	cfg.QPS, cfg.Burst = 50, 100
	cfg.Timeout = timeout
	s, err := scheme.New()
	if err != nil {
		return nil, "", err
	}
	c, err := ctrl.New(cfg, ctrl.Options{Scheme: s})
	if err != nil {
		return nil, "", fmt.Errorf("connecting to context %q: %w", name, err)
	}
	return c, name, nil
}

// completeStatusArg completes KIND/ and, from the cluster, KIND/NAME.
func completeStatusArg(ctx context.Context, o *statusOptions, toComplete string) ([]string, cobra.ShellCompDirective) {
	kindName, prefix, ok := strings.Cut(toComplete, "/")
	if !ok {
		var out []string
		for _, k := range status.KindNames() {
			if strings.HasPrefix(k, strings.ToLower(toComplete)) {
				out = append(out, k+"/")
			}
		}
		return out, cobra.ShellCompDirectiveNoSpace | cobra.ShellCompDirectiveNoFileComp
	}
	k, found := status.Lookup(kindName)
	if !found {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	c, _, err := o.cluster.statusClient(5 * time.Second)
	if err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	if ctx == nil {
		ctx = context.Background()
	}
	g := &status.Gatherer{Client: c}
	objs, err := g.List(ctx, k, o.namespace)
	if err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	var out []string
	for _, obj := range objs {
		if strings.HasPrefix(obj.GetName(), prefix) && !slices.Contains(out, kindName+"/"+obj.GetName()) {
			out = append(out, kindName+"/"+obj.GetName())
		}
	}
	return out, cobra.ShellCompDirectiveNoFileComp
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// kubeError marks errors of the API server for the exit codes: refused
// credentials are 4, as a registry's.
func kubeError(err error) error {
	if isKubeAuthError(err) {
		return kubeAuthError{err}
	}
	return err
}

type kubeAuthError struct{ err error }

func (e kubeAuthError) Error() string {
	return e.err.Error() + ": check the kubeconfig's credentials, and that they may read Capwright's and Flux's objects"
}
func (e kubeAuthError) Unwrap() error { return e.err }

func isKubeAuthError(err error) bool {
	return apierrors.IsUnauthorized(err) || apierrors.IsForbidden(err)
}
