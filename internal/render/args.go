package render

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/capwright/capwright/api/providers/v1alpha1"
)

// flagSet is a set of command-line flags by name (without dashes), each
// remembering the spec field it came from so a flag set twice is reported
// with both fields.
type flagSet struct {
	values map[string]string
	fields map[string]string
}

func newFlagSet() *flagSet {
	return &flagSet{values: map[string]string{}, fields: map[string]string{}}
}

// set adds --name=value from field; a flag may come from one field only.
func (f *flagSet) set(field, name, value string) error {
	name = strings.TrimLeft(name, "-")
	if name == "" || strings.ContainsAny(name, "= \t\n") {
		return fmt.Errorf("%s: %q is not a flag name; use the name without dashes or value, e.g. cluster-concurrency", field, name)
	}
	if prev, ok := f.fields[name]; ok {
		return fmt.Errorf("%s and %s both set --%s; set it in one place", prev, field, name)
	}
	f.values[name], f.fields[name] = value, field
	return nil
}

// managerFlags adds spec.manager's flags, named as Cluster API managers
// name them. Feature gates are merged gate by gate into the
// --feature-gates of base, the components' args (see mergeFeatureGates).
func managerFlags(f *flagSet, m *v1alpha1.ManagerSpec, base []string) error {
	if m == nil {
		return nil
	}
	const field = "spec.manager"
	var errs []error
	add := func(sub, flag, value string) { errs = append(errs, f.set(field+sub, flag, value)) }
	if len(m.FeatureGates) > 0 {
		current, _ := flagValue(base, "feature-gates")
		add(".featureGates", "feature-gates", mergeFeatureGates(current, m.FeatureGates))
	}
	if m.Verbosity != nil {
		add(".verbosity", "v", strconv.Itoa(int(*m.Verbosity)))
	}
	if m.SyncPeriod != nil {
		add(".syncPeriod", "sync-period", m.SyncPeriod.Duration.String())
	}
	if m.MetricsBindAddress != "" {
		add(".metricsBindAddress", "diagnostics-address", m.MetricsBindAddress)
	}
	if m.HealthProbeBindAddress != "" {
		add(".healthProbeBindAddress", "health-addr", m.HealthProbeBindAddress)
	}
	for _, name := range slices.Sorted(maps.Keys(m.AdditionalArgs)) {
		add(".additionalArgs", name, m.AdditionalArgs[name])
	}
	return errors.Join(errs...)
}

// mergeFeatureGates sets gates in a --feature-gates value. Gates the
// components already list keep their place (and, when not set here, their
// value — often a clusterctl variable with a default such as
// MachinePool=${EXP_MACHINE_POOL:=true}); new gates follow in name order.
// Replacing the whole value instead would silently reset every gate not
// named in spec.manager.featureGates to the binary's default.
func mergeFeatureGates(current string, gates map[string]bool) string {
	var out []string
	done := map[string]bool{}
	for _, gate := range strings.Split(current, ",") {
		name, _, _ := strings.Cut(gate, "=")
		name = strings.TrimSpace(name)
		if name == "" {
			continue
		}
		if on, ok := gates[name]; ok {
			gate = name + "=" + strconv.FormatBool(on)
			done[name] = true
		}
		out = append(out, gate)
	}
	for _, name := range slices.Sorted(maps.Keys(gates)) {
		if !done[name] {
			out = append(out, name+"="+strconv.FormatBool(gates[name]))
		}
	}
	return strings.Join(out, ",")
}

// flagName returns the name of a --name[=value] or -name[=value] argument.
func flagName(arg string) (string, bool) {
	if !strings.HasPrefix(arg, "-") {
		return "", false
	}
	name, _, _ := strings.Cut(strings.TrimLeft(arg, "-"), "=")
	return name, name != ""
}

// flagValue returns the value of --name=value in args.
func flagValue(args []string, name string) (string, bool) {
	for _, arg := range args {
		if n, ok := flagName(arg); ok && n == name {
			_, value, _ := strings.Cut(arg, "=")
			return value, true
		}
	}
	return "", false
}

// mergeArgs sets flags in args: an argument with the same flag name is
// replaced in place (later repeats of it are dropped), the others are
// appended in name order, so the result is stable across renders.
//
// Only the --name=value and bare --name forms are recognised; a value
// given as a separate argument (--name value) would be left behind.
// Cluster API's managers use the = form throughout.
func mergeArgs(args []string, flags map[string]string) []string {
	out := make([]string, 0, len(args)+len(flags))
	done := map[string]bool{}
	for _, arg := range args {
		name, isFlag := flagName(arg)
		value, set := flags[name]
		switch {
		case !isFlag || !set:
			out = append(out, arg)
		case !done[name]:
			out = append(out, "--"+name+"="+value)
			done[name] = true
		}
	}
	for _, name := range slices.Sorted(maps.Keys(flags)) {
		if !done[name] {
			out = append(out, "--"+name+"="+flags[name])
		}
	}
	return out
}
