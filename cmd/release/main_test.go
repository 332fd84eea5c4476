package main

import (
	"bytes"
	"context"
	"slices"
	"strings"
	"testing"
)

func TestParseFlags(t *testing.T) {
	var stderr bytes.Buffer
	o, imageOnly, err := parseFlags([]string{
		"-version", "v0.1.0", "-registry", "localhost:5000/capwright", "-plain-http",
		"-image-platforms", "linux/amd64", "-no-cli", "-allow-dirty", "-output", "out",
	}, &stderr)
	if err != nil {
		t.Fatal(err)
	}
	if imageOnly || o.Version != "v0.1.0" || o.Registry != "localhost:5000/capwright" || !o.PlainHTTP || !o.AllowDirty || o.Output != "out" {
		t.Errorf("options %+v", o)
	}
	if !slices.Equal(o.ImagePlatforms, []string{"linux/amd64"}) {
		t.Errorf("image platforms %v", o.ImagePlatforms)
	}
	if o.CLIPlatforms == nil || len(o.CLIPlatforms) != 0 {
		t.Errorf("-no-cli gave CLI platforms %#v, want an empty non-nil slice", o.CLIPlatforms)
	}

	o, _, _ = parseFlags([]string{"-version", "v0.1.0"}, &stderr)
	if o.CLIPlatforms != nil || o.ImagePlatforms != nil {
		t.Errorf("no platform flags gave %v and %v, want the defaults (nil)", o.ImagePlatforms, o.CLIPlatforms)
	}
}

func TestRunWithoutAVersionSaysHowToGiveOne(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if code := run(context.Background(), []string{"-registry", "localhost:5000/x"}, &stdout, &stderr); code != 1 {
		t.Errorf("exit code %d, want 1", code)
	}
	if !strings.Contains(stderr.String(), "make release VERSION=v0.1.0") {
		t.Errorf("stderr %q", stderr.String())
	}
	if code := run(context.Background(), []string{"stray"}, &stdout, &stderr); code != 2 {
		t.Errorf("a stray argument: exit code %d, want 2", code)
	}
}
