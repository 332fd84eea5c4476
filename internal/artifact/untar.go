package artifact

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"path"
	"strings"
)

// maxEntries bounds the entries of a layer: a provider artifact holds a
// handful of files.
const maxEntries = 1024

// errUncompressedTooLarge reports a layer that expands beyond the limit.
var errUncompressedTooLarge = errors.New("uncompressed layer too large")

// ErrLayerTooLarge is returned by Untar for a layer that expands beyond
// its limit.
var ErrLayerTooLarge = errUncompressedTooLarge

// Untar reads a tar+gzip layer in memory with the checks every artifact
// Capwright reads gets: regular files only, clean relative paths, at most
// limit bytes unpacked (ErrLayerTooLarge beyond) and 1024 entries. It
// returns the files by path.
func Untar(layer []byte, limit int64) (map[string][]byte, error) { return untar(layer, limit) }

// unsafeEntryError is a tar entry that could escape or alias the
// extraction root, or that is not a plain file.
type unsafeEntryError struct {
	name, reason string
}

func (e *unsafeEntryError) Error() string {
	return fmt.Sprintf("the layer holds entry %q, %s", e.name, e.reason)
}

// untar extracts a tar+gzip layer in memory: regular files only, at clean
// relative paths, at most limit bytes of tar stream and maxEntries entries.
// fluxcd/pkg/tar does the same checks but extracts to disk; preflight needs
// the bytes, not files.
func untar(layer []byte, limit int64) (map[string][]byte, error) {
	gz, err := gzip.NewReader(bytes.NewReader(layer))
	if err != nil {
		return nil, fmt.Errorf("the layer is not gzip-compressed: %w", err)
	}
	defer gz.Close()
	// One byte over the limit tells "exactly at the limit" from "beyond".
	stream := &io.LimitedReader{R: gz, N: limit + 1}
	tr := tar.NewReader(stream)
	files := map[string][]byte{}
	for entries := 1; ; entries++ {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if stream.N <= 0 {
			return nil, errUncompressedTooLarge
		}
		if err != nil {
			return nil, fmt.Errorf("the layer is not a valid tar archive: %w", err)
		}
		if entries > maxEntries {
			return nil, fmt.Errorf("the layer holds more than %d entries", maxEntries)
		}
		name, err := cleanEntryName(hdr.Name)
		if err != nil {
			return nil, err
		}
		switch hdr.Typeflag {
		case tar.TypeDir, tar.TypeXGlobalHeader:
			continue
		case tar.TypeReg:
			if name == "." {
				return nil, &unsafeEntryError{name: hdr.Name, reason: "a file without a name"}
			}
		default:
			return nil, &unsafeEntryError{name: hdr.Name, reason: fmt.Sprintf("of type %s; only regular files and directories are allowed", entryType(hdr.Typeflag))}
		}
		if hdr.Size > limit {
			return nil, errUncompressedTooLarge
		}
		if _, dup := files[name]; dup {
			return nil, &unsafeEntryError{name: hdr.Name, reason: "a second time"}
		}
		data, err := io.ReadAll(tr)
		if stream.N <= 0 {
			return nil, errUncompressedTooLarge
		}
		if err != nil {
			return nil, fmt.Errorf("reading %s from the layer: %w", name, err)
		}
		files[name] = data
	}
	// Reading the gzip trailer verifies its CRC; anything after the tar
	// end-of-archive marker is ignored as tar tools do.
	if _, err := io.Copy(io.Discard, stream); err != nil {
		return nil, fmt.Errorf("the layer's gzip stream is corrupt: %w", err)
	}
	if stream.N <= 0 {
		return nil, errUncompressedTooLarge
	}
	return files, nil
}

// cleanEntryName accepts only clean relative paths: no absolute paths, no
// ".." element anywhere, no backslashes. "./a" becomes "a".
func cleanEntryName(name string) (string, error) {
	switch {
	case name == "":
		return "", &unsafeEntryError{name: name, reason: "with an empty name"}
	case strings.HasPrefix(name, "/"):
		return "", &unsafeEntryError{name: name, reason: "an absolute path"}
	case strings.Contains(name, `\`):
		return "", &unsafeEntryError{name: name, reason: "a path with a backslash"}
	}
	for _, element := range strings.Split(name, "/") {
		if element == ".." {
			return "", &unsafeEntryError{name: name, reason: "a path that leaves the archive root"}
		}
	}
	return path.Clean(name), nil
}

func entryType(flag byte) string {
	switch flag {
	case tar.TypeSymlink:
		return "symlink"
	case tar.TypeLink:
		return "hard link"
	case tar.TypeChar, tar.TypeBlock:
		return "device"
	case tar.TypeFifo:
		return "named pipe"
	}
	return fmt.Sprintf("%q", flag)
}
