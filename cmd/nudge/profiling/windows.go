// Package profiling profiles the daemon for the benchmarks (CPU and Trace for a whole run:
// the hidden serve --cpuprofile and --trace; Windows in windows a benchmark chooses by
// signal: --profile-windows) and gives the heap of a burst back to the OS once the daemon
// is idle (ReleaseIdleHeap).
package profiling

import (
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"runtime/pprof"
	"syscall"
)

// Windows profiles the daemon in windows a benchmark chooses (the hidden
// --profile-windows DIR): SIGUSR1 starts a CPU profile into DIR/cpu.prof and writes the
// allocations so far to DIR/allocs.base; SIGUSR2 stops it and writes DIR/allocs.prof
// (go tool pprof -diff_base DIR/allocs.base DIR/allocs.prof: the window's allocations).
// Files are overwritten by the next window. stop ends the watch.
func Windows(dir string) (stop func(), err error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("profile-windows: %w", err)
	}
	sig := make(chan os.Signal, 2)
	signal.Notify(sig, syscall.SIGUSR1, syscall.SIGUSR2)
	done := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		var cpu *os.File
		end := func() {
			if cpu != nil {
				pprof.StopCPUProfile()
				cpu.Close()
				cpu = nil
				writeAllocs(filepath.Join(dir, "allocs.prof"))
			}
		}
		defer end()
		for {
			select {
			case <-done:
				return
			case s := <-sig:
				end()
				if s != syscall.SIGUSR1 {
					continue
				}
				writeAllocs(filepath.Join(dir, "allocs.base"))
				f, err := os.Create(filepath.Join(dir, "cpu.prof"))
				if err != nil {
					continue
				}
				if pprof.StartCPUProfile(f) != nil {
					f.Close()
					continue
				}
				cpu = f
			}
		}
	}()
	return func() {
		signal.Stop(sig)
		close(done)
		<-finished
	}, nil
}

func writeAllocs(path string) {
	if f, err := os.Create(path); err == nil {
		_ = pprof.Lookup("allocs").WriteTo(f, 0)
		f.Close()
	}
}
