package main

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"
	"oras.land/oras-go/v2/registry/remote/credentials"

	"github.com/capwright/capwright/internal/artifact"
)

// version is set by the build (-ldflags "-X main.version=…").
var version = "dev"

// registryOptions are the flags every command that talks to a registry
// shares.
type registryOptions struct {
	plainHTTP      bool
	insecure       bool
	caFile         string
	registryConfig string
}

func (o *registryOptions) addFlags(cmd *cobra.Command) {
	f := cmd.PersistentFlags()
	f.BoolVar(&o.plainHTTP, "plain-http", false, "talk plain HTTP to the registries (e.g. a local registry on 127.0.0.1); HTTPS otherwise")
	f.BoolVar(&o.insecure, "insecure", false, "accept any TLS certificate of the registries: no verification, use only for testing")
	f.StringVar(&o.caFile, "ca-file", "", "PEM file of certificate authorities to trust for the registries, in addition to the system's")
	f.StringVar(&o.registryConfig, "registry-config", "", "docker config file with registry credentials (default: $DOCKER_CONFIG/config.json or ~/.docker/config.json, with its credential helpers)")
}

// access builds registry access from the flags and the docker credential
// chain. Credentials are looked up per registry host when a request needs
// them; they are never printed.
func (o *registryOptions) access() (artifact.Access, error) {
	a := artifact.Access{
		PlainHTTP:          o.plainHTTP,
		InsecureSkipVerify: o.insecure,
		UserAgent:          "capwright/" + version,
	}
	if o.caFile != "" {
		pool, err := caFilePool("--ca-file", o.caFile)
		if err != nil {
			return a, err
		}
		a.RootCAs = pool
	}
	var (
		store credentials.Store
		err   error
	)
	storeOpts := credentials.StoreOptions{DetectDefaultNativeStore: true}
	if o.registryConfig != "" {
		if _, statErr := os.Stat(o.registryConfig); statErr != nil {
			return a, usageErrorf("--registry-config: %v", statErr)
		}
		store, err = credentials.NewStore(o.registryConfig, storeOpts)
	} else {
		store, err = credentials.NewStoreFromDocker(storeOpts)
	}
	if err != nil {
		return a, fmt.Errorf("reading registry credentials: %w", err)
	}
	a.Credentials = credentials.Credential(store)
	return a, nil
}

func newRootCommand() *cobra.Command {
	reg := &registryOptions{}
	root := &cobra.Command{
		Use:   "capwright",
		Short: "Publish, inspect and mirror Cluster API provider artifacts on OCI registries",
		Long: `capwright works with Cluster API provider release artifacts on OCI
registries: one tar+gzip layer holding metadata.yaml and the provider's
components file, with annotations naming the provider and version (the layout
Cluster API proposes upstream, and what the Capwright controller installs).

Registry credentials come from the docker credential chain
($DOCKER_CONFIG/config.json or ~/.docker/config.json and its credential
helpers), as "docker login" or "oras login" write them.

Exit codes:
  0  success
  1  failure not covered below (for mirror: some references failed)
  2  invalid command line or input (flags, arguments, versions, release
     files, --annotation contradicting the flags of publish)
  3  not found (tag, digest or repository; for status: KIND/NAME; for
     status, diff and upgrade plan: Capwright's kinds, not installed on
     the cluster)
  4  the registry (or the API server) refused the credentials
     (HTTP 401/403)
  5  connection or TLS failure (also --plain-http to a TLS registry)
  6  the artifact breaks the provider artifact contract (layout, size,
     unsafe tar entries, annotations contradicting its tag)
  7  convert: the CRs were converted, but some fields need a human (see
     its report)
  8  build, diff: the manager would refuse a custom resource; status:
     something shown is not Ready
  9  diff could not compare (1 is diff's differences, as kubectl diff)`,
		Version:       version,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageError{err} })
	reg.addFlags(root)
	for _, add := range subcommands {
		root.AddCommand(add(reg))
	}
	return root
}

// subcommands are registered by the files that define them, so each command
// lives in its own file.
var subcommands []func(*registryOptions) *cobra.Command
