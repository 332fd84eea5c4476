package main

import (
	"fmt"

	"github.com/spf13/cobra"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	ctrl "sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/capwright/capwright/internal/scheme"
)

// clusterOptions are the flags that pick a cluster, as kubectl's.
type clusterOptions struct {
	kubeconfig string
	context    string
}

// addFlags adds --kubeconfig and --context to cmd; purpose says what the
// cluster is for in their help ("for --from-cluster ", or "").
func (o *clusterOptions) addFlags(cmd *cobra.Command, purpose string) {
	f := cmd.Flags()
	f.StringVar(&o.kubeconfig, "kubeconfig", "", "kubeconfig file "+purpose+"(default: $KUBECONFIG or ~/.kube/config)")
	f.StringVar(&o.context, "context", "", "kubeconfig context "+purpose+"(default: the current context)")
}

// restConfig is the client configuration of the cluster the flags name,
// and the context's name.
func (o *clusterOptions) restConfig() (*rest.Config, string, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = o.kubeconfig
	config := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{CurrentContext: o.context})
	raw, err := config.RawConfig()
	if err != nil {
		return nil, "", usageErrorf("reading the kubeconfig: %v", err)
	}
	name := o.context
	if name == "" {
		name = raw.CurrentContext
	}
	cfg, err := config.ClientConfig()
	if err != nil {
		return nil, "", usageErrorf("kubeconfig context %q: %v", name, err)
	}
	cfg.UserAgent = "capwright/" + version
	// The API server's warnings are about objects the commands read or
	// dry-run (Flux's finalizer names, deprecated fields of others'
	// kinds): not the user's to act on here, and not printed.
	cfg.WarningHandlerWithContext = rest.NoWarnings{}
	return cfg, name, nil
}

// dynamicClient connects to the cluster the flags name.
func (o *clusterOptions) dynamicClient() (dynamic.Interface, string, error) {
	cfg, name, err := o.restConfig()
	if err != nil {
		return nil, "", err
	}
	client, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, "", fmt.Errorf("connecting to context %q: %w", name, err)
	}
	return client, name, nil
}

// client connects to the cluster the flags name with Capwright's scheme
// (its kinds, Flux's and the Cluster API kinds it reads).
func (o *clusterOptions) client() (ctrl.Client, string, error) {
	cfg, name, err := o.restConfig()
	if err != nil {
		return nil, "", err
	}
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
