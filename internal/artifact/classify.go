package artifact

// RegistryError turns an oras-go error from a request about ref into
// *AuthError or *NotFoundError when it is one, and otherwise wraps it as
// "<action> <ref>: <err>". Other packages that talk to registries through
// Access (the mirror) report errors the same way as the Fetcher.
func RegistryError(ref Reference, action string, err error) error {
	return registryError(ref, action, err)
}
