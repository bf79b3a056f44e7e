//go:build unix && !linux

package store

var releaser pageReleaser = remapRelease{}
