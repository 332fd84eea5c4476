// Package plane starts and stops a local Kubernetes management plane made of
// real components running as local processes.
package plane
