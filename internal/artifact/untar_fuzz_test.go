package artifact_test

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"path"
	"strings"
	"testing"

	"github.com/capwright/capwright/internal/artifact"
)

// rawTarGz packs entries as they are given, names and types unchecked: the
// hostile layers a registry could serve.
func rawTarGz(t testing.TB, entries ...tar.Header) []byte {
	t.Helper()
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	for _, h := range entries {
		body := []byte(strings.Repeat("x", int(h.Size)))
		if err := tw.WriteHeader(&h); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write(body); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := gz.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// FuzzUntar feeds arbitrary bytes to the layer reader every fetched
// artifact goes through. Whatever it accepts holds only clean relative
// paths, within the byte limit; nothing panics.
func FuzzUntar(f *testing.F) {
	good, err := artifact.PackTarGz(map[string][]byte{"core-components.yaml": []byte("kind: Namespace\n"), "metadata.yaml": []byte("kind: Metadata\n")})
	if err != nil {
		f.Fatal(err)
	}
	f.Add(good, int64(1<<20))
	f.Add(good, int64(10))
	f.Add(rawTarGz(f, tar.Header{Name: "../../etc/passwd", Typeflag: tar.TypeReg, Size: 4, Mode: 0o644}), int64(1<<20))
	f.Add(rawTarGz(f, tar.Header{Name: "/abs", Typeflag: tar.TypeReg, Size: 1, Mode: 0o644}), int64(1<<20))
	f.Add(rawTarGz(f, tar.Header{Name: "link", Typeflag: tar.TypeSymlink, Linkname: "/etc/passwd", Mode: 0o777}), int64(1<<20))
	f.Add(rawTarGz(f, tar.Header{Name: "a", Typeflag: tar.TypeReg, Size: 2, Mode: 0o644}, tar.Header{Name: "./a", Typeflag: tar.TypeReg, Size: 2, Mode: 0o644}), int64(1<<20))
	f.Add(rawTarGz(f, tar.Header{Name: `dir\..\x`, Typeflag: tar.TypeReg, Size: 1, Mode: 0o644}), int64(1<<20))
	f.Add([]byte{0x1f, 0x8b, 0x08, 0x00}, int64(1<<20))
	f.Add([]byte("not gzip"), int64(0))
	f.Fuzz(func(t *testing.T, layer []byte, limit int64) {
		if limit < 0 || limit > 1<<22 {
			limit = 1 << 22
		}
		files, err := artifact.Untar(layer, limit)
		if err != nil {
			if files != nil {
				t.Errorf("Untar returned files along with the error %v", err)
			}
			return
		}
		var total int64
		for name, data := range files {
			if name == "" || name == "." || path.IsAbs(name) || path.Clean(name) != name || strings.Contains(name, `\`) ||
				name == ".." || strings.HasPrefix(name, "../") {
				t.Errorf("accepted an entry at %q, which is not a clean relative path", name)
			}
			total += int64(len(data))
		}
		if total > limit {
			t.Errorf("unpacked %d bytes, over the limit of %d", total, limit)
		}
	})
}
