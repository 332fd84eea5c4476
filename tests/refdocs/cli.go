package refdocs

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"sort"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// DocgenTag is the build tag under which cmd/capwright and cmd/manager
// print their command line as JSON (Dump) instead of running: the
// generator reads the real cobra commands and flag set, and the shipped
// binaries carry nothing of it.
const DocgenTag = "docgen"

// Command is a command line as the reference shows it: a cobra command
// with its subcommands, or the manager's flag set (no subcommands).
type Command struct {
	Path     string     `json:"path"`
	Use      string     `json:"use"`
	Short    string     `json:"short,omitempty"`
	Long     string     `json:"long,omitempty"`
	Example  string     `json:"example,omitempty"`
	Flags    []Flag     `json:"flags,omitempty"`
	Global   []Flag     `json:"global,omitempty"`
	Commands []*Command `json:"commands,omitempty"`
}

// Flag is one flag, its default as pflag prints it.
type Flag struct {
	Name      string `json:"name"`
	Shorthand string `json:"shorthand,omitempty"`
	Type      string `json:"type"`
	Default   string `json:"default,omitempty"`
	Usage     string `json:"usage"`
}

// FromCobra reads a cobra command tree; hidden commands, help and
// completion are left out.
func FromCobra(c *cobra.Command) *Command {
	out := &Command{Path: c.CommandPath(), Use: c.UseLine(), Short: c.Short, Long: c.Long, Example: c.Example}
	if !c.HasParent() && c.Version != "" {
		c.InitDefaultVersionFlag()
	}
	out.Flags = flags(c.NonInheritedFlags())
	out.Global = flags(c.InheritedFlags())
	for _, sub := range c.Commands() {
		if !sub.IsAvailableCommand() || sub.Name() == "help" || sub.Name() == "completion" {
			continue
		}
		out.Commands = append(out.Commands, FromCobra(sub))
	}
	return out
}

// FromFlagSet reads a flag set (the manager's).
func FromFlagSet(path string, fs *pflag.FlagSet) *Command {
	return &Command{Path: path, Use: path + " [flags]", Flags: flags(fs)}
}

func flags(fs *pflag.FlagSet) []Flag {
	var out []Flag
	fs.VisitAll(func(f *pflag.Flag) {
		if f.Hidden || f.Name == "help" {
			return
		}
		typ := f.Value.Type()
		def := f.DefValue
		if typ == "bool" && def == "false" || def == "[]" {
			def = ""
		}
		out = append(out, Flag{Name: f.Name, Shorthand: f.Shorthand, Type: typ, Default: def, Usage: f.Usage})
	})
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// Dump writes c as JSON to stdout; the docgen builds call it.
func Dump(c *Command) {
	enc := json.NewEncoder(os.Stdout)
	enc.SetIndent("", " ")
	if err := enc.Encode(c); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

// readCommand runs `go run -tags docgen ./cmd/<name>` in the repository
// and reads the command line it prints.
func readCommand(root, pkg string) (*Command, error) {
	goTool := os.Getenv("GO")
	if goTool == "" {
		goTool = "go"
	}
	cmd := exec.Command(goTool, "run", "-tags", DocgenTag, pkg)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "CAPWRIGHT_DOCGEN=1")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("go run -tags %s %s: %w\n%s", DocgenTag, pkg, err, stderr.String())
	}
	c := &Command{}
	if err := json.Unmarshal(stdout.Bytes(), c); err != nil {
		return nil, fmt.Errorf("reading %s's command line: %w", pkg, err)
	}
	return c, nil
}

// cliPage is docs/reference/cli.md: every command of capwright, its
// usage, description, examples and flags.
func cliPage(root *Command) string {
	var b strings.Builder
	header(&b, "capwright CLI reference", "the cobra commands of cmd/capwright")
	b.WriteString("Task-oriented walk-throughs are in [the CLI guide](../cli.md).\n\n")
	var all []*Command
	var walk func(c *Command)
	walk = func(c *Command) {
		all = append(all, c)
		for _, s := range c.Commands {
			walk(s)
		}
	}
	walk(root)
	b.WriteString("| Command | What it does |\n|---|---|\n")
	for _, c := range all[1:] {
		if len(c.Commands) > 0 && c.Long == "" && len(c.Flags) == 0 {
			continue // a group such as "upgrade": its subcommands are listed
		}
		fmt.Fprintf(&b, "| [`%s`](#%s) | %s |\n", c.Path, anchor(c.Path), cell(c.Short))
	}
	b.WriteString("\n")
	fmt.Fprintf(&b, "## %s\n\n%s\n\n```text\n%s\n```\n\n", root.Path, root.Short, strings.TrimSpace(root.Long))
	b.WriteString("### Global flags\n\nEvery command takes these.\n\n")
	flagTable(&b, root.Flags)
	for _, c := range all[1:] {
		if len(c.Commands) > 0 && c.Long == "" && len(c.Flags) == 0 {
			continue
		}
		fmt.Fprintf(&b, "## %s\n\n%s.\n\n```text\n%s\n```\n\n", c.Path, strings.TrimSuffix(c.Short, "."), c.Use)
		if c.Long != "" {
			fmt.Fprintf(&b, "```text\n%s\n```\n\n", strings.TrimSpace(c.Long))
		}
		if c.Example != "" {
			fmt.Fprintf(&b, "Examples:\n\n```sh\n%s\n```\n\n", dedent(c.Example))
		}
		fs := slices.Clone(c.Flags)
		for _, f := range c.Global {
			if !slices.ContainsFunc(root.Flags, func(r Flag) bool { return r.Name == f.Name }) {
				fs = append(fs, f) // a parent's flag, not a global one
			}
		}
		if len(fs) > 0 {
			flagTable(&b, fs)
		}
	}
	return b.String()
}

// managerPage is docs/reference/manager.md: the manager's flags.
func managerPage(m *Command) string {
	var b strings.Builder
	header(&b, "Manager flags", "the flag set of cmd/manager")
	b.WriteString("The manager (`capwright-manager`, the Deployment `capwright-manager` in\n" +
		"`capwright-system`) takes flags only. Flux's runtime options (logging, the\n" +
		"Kubernetes client, leader election, feature gates) are named as Flux's\n" +
		"controllers name them. How to set them: [install.md](../install.md).\n\n")
	flagTable(&b, m.Flags)
	return b.String()
}

func flagTable(b *strings.Builder, fs []Flag) {
	b.WriteString("| Flag | Type | Default | Description |\n|---|---|---|---|\n")
	for _, f := range fs {
		name := "`--" + f.Name + "`"
		if f.Shorthand != "" {
			name = "`-" + f.Shorthand + "`, " + name
		}
		def := ""
		if f.Default != "" {
			def = "`" + strings.ReplaceAll(f.Default, "|", `\|`) + "`"
		}
		fmt.Fprintf(b, "| %s | %s | %s | %s |\n", name, f.Type, def, cell(f.Usage))
	}
	b.WriteString("\n")
}

// dedent removes the indentation every line of an example shares.
func dedent(s string) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	indent := -1
	for _, l := range lines {
		if strings.TrimSpace(l) == "" {
			continue
		}
		n := len(l) - len(strings.TrimLeft(l, " \t"))
		if indent < 0 || n < indent {
			indent = n
		}
	}
	for i, l := range lines {
		if len(l) >= indent {
			lines[i] = l[indent:]
		}
	}
	return strings.Join(lines, "\n")
}
