package mirror

import (
	"strings"
	"testing"
)

// FuzzParseImage feeds arbitrary image references, as a components file
// could write them, to the parser the mirror plans its copies with. It
// never panics; what it accepts has a host, a repository and a tag or a
// digest that oras-go's rules accept, and its name is the reference
// without tag and digest.
func FuzzParseImage(f *testing.F) {
	for _, seed := range []string{
		"registry.k8s.io/cluster-api/cluster-api-controller:v1.14.2",
		"nginx",
		"library/nginx:1.27",
		"localhost:5000/a/b@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
		"index.docker.io/x",
		"host:port/with:colon:tag",
		"UPPER/Case",
		"a/b:@",
		"",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, written string) {
		img, err := parseImage(written)
		if err != nil {
			return
		}
		if img.Source.Host == "" || img.Source.Repository == "" || (img.Source.Tag == "" && img.Source.Digest == "") {
			t.Errorf("parseImage(%q) = %+v: no host, repository or reference", written, img.Source)
		}
		if !strings.HasPrefix(written, img.Name) {
			t.Errorf("parseImage(%q): name %q is not the reference without tag and digest", written, img.Name)
		}
		if err := validate(img.Source); err != nil {
			t.Errorf("parseImage(%q) accepted %+v, which oras-go refuses: %v", written, img.Source, err)
		}
	})
}
