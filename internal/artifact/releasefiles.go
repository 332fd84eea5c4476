package artifact

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// ReadReleaseFiles reads the release files to publish from paths: files,
// and directories whose regular files are taken (not recursively). A
// directory holding anything else (subdirectories, symlinks, devices) is
// refused, so that what is published is exactly what is listed. The files
// may add up to at most limit bytes. Errors are *ReleaseError.
func ReadReleaseFiles(paths []string, limit int64) (map[string][]byte, error) {
	if len(paths) == 0 {
		return nil, releaseError("give the release directory, or metadata.yaml and the components file", "no release files given")
	}
	reader := &releaseReader{files: map[string][]byte{}, from: map[string]string{}, left: limit, limit: limit}
	for _, p := range paths {
		info, err := os.Lstat(p)
		if err != nil {
			return nil, releaseError("give an existing release directory or file", "cannot read %s: %v", p, unwrapPath(err))
		}
		if info.IsDir() {
			err = reader.addDir(p)
		} else {
			err = reader.addFile(p)
		}
		if err != nil {
			return nil, err
		}
	}
	return reader.files, nil
}

// releaseReader collects release files within a byte budget.
type releaseReader struct {
	files       map[string][]byte
	from        map[string]string // file name → the path it was read from
	left, limit int64
}

func (r *releaseReader) addDir(dir string) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return releaseError("check the directory's permissions", "cannot list %s: %v", dir, unwrapPath(err))
	}
	var refused []string
	var regular []string
	for _, e := range entries {
		switch {
		case e.Type().IsRegular():
			regular = append(regular, e.Name())
		case e.IsDir():
			refused = append(refused, e.Name()+"/ (a directory)")
		case e.Type()&fs.ModeSymlink != 0:
			refused = append(refused, e.Name()+" (a symlink)")
		default:
			refused = append(refused, e.Name()+" (not a regular file)")
		}
	}
	if len(refused) > 0 {
		return releaseError("publish packs only the regular files at the top of a directory, with nothing else in it: move the others out, or give the release files one by one as arguments",
			"directory %s holds %s", dir, strings.Join(refused, ", "))
	}
	if len(regular) == 0 {
		return releaseError("give the directory holding metadata.yaml and the components file", "directory %s is empty", dir)
	}
	for _, name := range regular {
		if err := r.addFile(filepath.Join(dir, name)); err != nil {
			return err
		}
	}
	return nil
}

// addFile reads one file; a symlink given by name is followed.
func (r *releaseReader) addFile(p string) error {
	name := filepath.Base(p)
	if first, dup := r.from[name]; dup {
		return releaseError("an artifact holds one file of each name: give only one of them", "%s and %s have the same name", first, p)
	}
	f, err := os.Open(p)
	if err != nil {
		return releaseError("check the file's path and permissions", "cannot read %s: %v", p, unwrapPath(err))
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return releaseError("check the file's path and permissions", "cannot read %s: %v", p, unwrapPath(err))
	}
	if !info.Mode().IsRegular() {
		return releaseError("give regular files or directories of them", "%s is not a regular file", p)
	}
	// One byte over the budget tells "exactly at the limit" from "beyond".
	data, err := io.ReadAll(io.LimitReader(f, r.left+1))
	if err != nil {
		return releaseError("check the file", "cannot read %s: %v", p, unwrapPath(err))
	}
	if int64(len(data)) > r.left {
		return releaseError("provider artifacts hold a few MiB of YAML; raise --max-artifact-size if this is intended (the controller must allow it too)",
			"the release files add up to more than the artifact size limit of %d bytes (at %s)", r.limit, p)
	}
	r.left -= int64(len(data))
	r.files[name] = data
	r.from[name] = p
	return nil
}

// unwrapPath drops the path from *fs.PathError: messages name it already.
func unwrapPath(err error) error {
	var pathErr *fs.PathError
	if errors.As(err, &pathErr) {
		return pathErr.Err
	}
	return err
}
