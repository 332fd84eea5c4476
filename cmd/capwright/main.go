// Command capwright publishes, inspects and mirrors Cluster API provider
// release artifacts on OCI registries, in the layout Cluster API proposes
// upstream and the Capwright controller installs from.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	cmd := newRootCommand()
	err := cmd.ExecuteContext(ctx)
	stop()
	var differences differencesError
	switch {
	case errors.As(err, &differences):
		fmt.Fprintln(os.Stderr, err) // diff's finding, not a failure
	case err != nil:
		fmt.Fprintf(os.Stderr, "Error: %s\n", err)
	}
	os.Exit(exitCode(err))
}
