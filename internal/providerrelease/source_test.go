package providerrelease

import (
	"errors"
	"strings"
	"testing"
)

func TestParseURL(t *testing.T) {
	tests := []struct {
		raw                     string
		kind                    Kind
		version, components     string
		metadataURL, projectURL string
	}{
		{
			raw: "https://github.com/kubernetes-sigs/cluster-api-provider-aws/releases/latest/infrastructure-components.yaml", kind: GitHub,
			version: Latest, components: "infrastructure-components.yaml",
			metadataURL: "https://github.com/kubernetes-sigs/cluster-api-provider-aws/releases/download/v2.8.1/metadata.yaml",
			projectURL:  "https://github.com/kubernetes-sigs/cluster-api-provider-aws",
		},
		{
			raw: "https://github.com/kubernetes-sigs/cluster-api/releases/v2.8.1/core-components.yaml", kind: GitHub,
			version: "v2.8.1", components: "core-components.yaml",
			metadataURL: "https://github.com/kubernetes-sigs/cluster-api/releases/download/v2.8.1/metadata.yaml",
			projectURL:  "https://github.com/kubernetes-sigs/cluster-api",
		},
		{
			raw: "https://github.com/o/r/releases/download/v2.8.1/infrastructure-components-development.yaml", kind: GitHub,
			version: "v2.8.1", components: "infrastructure-components-development.yaml",
			metadataURL: "https://github.com/o/r/releases/download/v2.8.1/metadata.yaml", projectURL: "https://github.com/o/r",
		},
		{
			raw: "https://github.com/o/r/releases/latest/download/ipam-components.yaml", kind: GitHub,
			version: Latest, components: "ipam-components.yaml",
			metadataURL: "https://github.com/o/r/releases/download/v2.8.1/metadata.yaml", projectURL: "https://github.com/o/r",
		},
		{
			raw: "https://github.com/o/r/releases/tag/v2.8.1", kind: GitHub, version: "v2.8.1",
			metadataURL: "https://github.com/o/r/releases/download/v2.8.1/metadata.yaml", projectURL: "https://github.com/o/r",
		},
		{
			raw: "https://GitHub.com/o/r/", kind: GitHub,
			metadataURL: "https://github.com/o/r/releases/download/v2.8.1/metadata.yaml", projectURL: "https://github.com/o/r",
		},
		{
			raw: "https://gitlab.example.com/api/v4/projects/group%2Fcapi-provider/packages/generic/capi/latest/infrastructure-components.yaml", kind: GitLab,
			version: Latest, components: "infrastructure-components.yaml",
			metadataURL: "https://gitlab.example.com/api/v4/projects/group%2Fcapi-provider/packages/generic/capi/v2.8.1/metadata.yaml",
			projectURL:  "https://gitlab.example.com/group/capi-provider",
		},
		{
			raw: "https://code.example.com/api/v4/projects/42/packages/generic/capi", kind: GitLab,
			metadataURL: "https://code.example.com/api/v4/projects/42/packages/generic/capi/v2.8.1/metadata.yaml",
			projectURL:  "https://code.example.com/api/v4/projects/42/packages/generic/capi",
		},
		{
			raw: "https://artifacts.example.com/github/kubernetes-sigs/cluster-api/releases/download/", kind: Plain,
			metadataURL: "https://artifacts.example.com/github/kubernetes-sigs/cluster-api/releases/download/v2.8.1/metadata.yaml",
			projectURL:  "https://artifacts.example.com/github/kubernetes-sigs/cluster-api/releases/download",
		},
		{
			raw: "https://mirror.example.com:8443/capi/infrastructure-aws/latest/infrastructure-components.yaml", kind: Plain,
			version: Latest, components: "infrastructure-components.yaml",
			metadataURL: "https://mirror.example.com:8443/capi/infrastructure-aws/v2.8.1/metadata.yaml",
			projectURL:  "https://mirror.example.com:8443/capi/infrastructure-aws",
		},
	}
	for _, tc := range tests {
		t.Run(tc.raw, func(t *testing.T) {
			src, err := ParseURL(tc.raw)
			if err != nil {
				t.Fatal(err)
			}
			if src.Kind != tc.kind || src.Version != tc.version || src.ComponentsPath != tc.components {
				t.Errorf("kind %s version %q components %q", src.Kind, src.Version, src.ComponentsPath)
			}
			got, err := src.FileURL("v2.8.1", MetadataFile)
			if err != nil || got != tc.metadataURL {
				t.Errorf("FileURL = %q, %v; want %s", got, err, tc.metadataURL)
			}
			if got := src.ProjectURL(); got != tc.projectURL {
				t.Errorf("ProjectURL = %s, want %s", got, tc.projectURL)
			}
		})
	}
}

func TestComponentsFile(t *testing.T) {
	named, _ := ParseURL("https://github.com/o/r/releases/latest/infrastructure-components-development.yaml")
	base, _ := ParseURL("https://github.com/o/r")
	if got := named.ComponentsFile("infrastructure"); got != "infrastructure-components-development.yaml" {
		t.Errorf("named: %s", got)
	}
	if got := base.ComponentsFile("control-plane"); got != "control-plane-components.yaml" {
		t.Errorf("base: %s", got)
	}
	if got := artifactName("runtime-extension", "runtime-extensions-components.yaml"); got != "runtime-extension-components.yaml" {
		t.Errorf("artifact name %s", got)
	}
}

func TestParseURLRefusals(t *testing.T) {
	tests := []struct {
		raw  string
		want []string
	}{
		{"", []string{"the release URL (spec.source.release.url) is empty", "https://github.com/{owner}/{repo}/releases/{latest|TAG}/{type}-components.yaml"}},
		{"aws", []string{`release URL "aws" is not a URL`, "give https://github.com/"}},
		{"infrastructure/aws", []string{`release URL "infrastructure/aws" is not a URL`}},
		{"github.com/o/r/releases/latest/core-components.yaml", []string{"is not a URL"}},
		{"http://mirror.example.com/capi/latest/core-components.yaml", []string{"release URL http://mirror.example.com/capi/latest/core-components.yaml is plain HTTP", "use https://, or allow plain HTTP explicitly with spec.source.release.insecure"}},
		{"file:///home/me/capi/latest/core-components.yaml", []string{"has scheme file", "capwright publish DIR"}},
		{"ftp://mirror.example.com/capi/", []string{"has scheme ftp", "give an https:// URL"}},
		{"https://me:hunter2@mirror.example.com/capi/", []string{"https://me:xxxxx@mirror.example.com/capi/ carries credentials", "give them with spec.source.release.secretRef"}},
		{"https://mirror.example.com/capi/latest/core-components.yaml?token=abc", []string{"has a query or fragment"}},
		{"https://github.com/kubernetes-sigs", []string{"names no repository", "https://github.com/{owner}/{repo}/releases/{latest|TAG}/{type}-components.yaml"}},
		{"https://github.com/o/r/tree/main/config", []string{"https://github.com/o/r/tree/main/config is not a GitHub release URL"}},
		{"https://gitlab.example.com/api/v4/projects/42/packages/npm/capi/latest/x.yaml", []string{"is not a GitLab generic package URL", "packages/generic/{package}/{latest|TAG}"}},
		{"https://mirror.example.com/capi/core-components.yaml", []string{"names the file core-components.yaml outside a version directory", "https://{host}/{path}/{latest|TAG}/{type}-components.yaml"}},
	}
	for _, tc := range tests {
		t.Run(tc.raw, func(t *testing.T) {
			_, err := ParseURL(tc.raw)
			var perr *Error
			if !errors.As(err, &perr) || perr.Reason != ReasonInvalidURL {
				t.Fatalf("err = %v, want an InvalidURL *Error", err)
			}
			for _, want := range tc.want {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q lacks %q", err, want)
				}
			}
			if strings.Contains(err.Error(), "hunter2") {
				t.Errorf("error shows the password: %v", err)
			}
		})
	}

	// Plain HTTP when allowed explicitly, with the CLI's names.
	src, err := ParseURLWith("http://127.0.0.1:8080/capi/", URLOptions{AllowPlainHTTP: true, Fields: Fields{Version: "--version"}})
	if err != nil || src.Kind != Plain || src.Scheme != "http" {
		t.Fatalf("plain HTTP allowed: %+v, %v", src, err)
	}
	if _, err := src.FileURL(Latest, MetadataFile); err == nil || !strings.Contains(err.Error(), "set --version to a release tag") {
		t.Errorf("CLI fields: %v", err)
	}
}

func TestFileURLRefusals(t *testing.T) {
	latest, _ := ParseURL("https://github.com/o/r/releases/latest/core-components.yaml")
	pinned, _ := ParseURL("https://github.com/o/r/releases/v1.14.1/core-components.yaml")
	tests := []struct {
		src     Source
		version string
		want    string
	}{
		{latest, "", "no version given for the release at https://github.com/o/r/releases/latest/core-components.yaml; set spec.version to a release tag, e.g. v1.14.2: Capwright fetches exactly the version named and never resolves \"latest\""},
		{latest, "latest", `version "latest" is not a release of https://github.com/o/r/releases/latest/core-components.yaml; set spec.version to a release tag`},
		{latest, "1.14.2", `version "1.14.2" (spec.version) is not a release tag; set spec.version to a release tag, e.g. v1.14.2`},
		{latest, "v1.14", `version "v1.14" (spec.version) is not a release tag`},
		{latest, "v1.14.2+build.1", `version "v1.14.2+build.1" (spec.version) is not a release tag`},
		{pinned, "v1.14.2", `release URL https://github.com/o/r/releases/v1.14.1/core-components.yaml names version v1.14.1, but spec.version is v1.14.2; write "latest" in the URL in place of v1.14.1`},
	}
	for _, tc := range tests {
		_, err := tc.src.FileURL(tc.version, MetadataFile)
		var perr *Error
		if !errors.As(err, &perr) || perr.Reason != ReasonInvalidVersion || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("FileURL(%q) = %v\nwant %s", tc.version, err, tc.want)
		}
	}
	if got, err := pinned.FileURL("v1.14.1", "core-components.yaml"); err != nil || got != "https://github.com/o/r/releases/download/v1.14.1/core-components.yaml" {
		t.Errorf("pinned: %s, %v", got, err)
	}
	if got, err := latest.FileURL("v1.15.0-rc.0", MetadataFile); err != nil || got != "https://github.com/o/r/releases/download/v1.15.0-rc.0/metadata.yaml" {
		t.Errorf("pre-release: %s, %v", got, err)
	}
	if _, err := latest.FileURL("v1.14.2", "../x.yaml"); err == nil {
		t.Error("a file name with a slash is accepted")
	}
}
