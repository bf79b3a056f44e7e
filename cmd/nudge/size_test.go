package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Package main only wires and talks to people: it stays within mainLines lines. Command
// bodies that grow move to the room (cmd/nudge/<room>) that provides what they do.
const mainLines = 3000

func TestPackageMainSize(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		n += strings.Count(string(b), "\n")
	}
	if n > mainLines {
		t.Errorf("package main has %d lines, more than %d: move command bodies into their rooms (cmd/nudge/<room>)", n, mainLines)
	}
}
