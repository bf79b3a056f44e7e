//go:build !linux

package main

import "syscall"

// dieWithHarness: no parent-death signal here; the harness's own cleanup is all.
func dieWithHarness() *syscall.SysProcAttr { return &syscall.SysProcAttr{} }
