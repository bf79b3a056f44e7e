package main

import "syscall"

// dieWithHarness: the child gets SIGTERM when this harness dies (the benchmarks run on
// Linux; elsewhere the harness's own cleanup is all).
func dieWithHarness() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM}
}
