package profiling

import (
	"fmt"
	"os"
	"runtime/pprof"
	"runtime/trace"
)

// CPU writes a CPU profile of the daemon to path until stop is called, and then its
// allocation profile to path.allocs (the hidden serve --cpuprofile).
func CPU(path string) (stop func(), err error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("cpuprofile: %w", err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("cpuprofile: %w", err)
	}
	return func() {
		pprof.StopCPUProfile()
		f.Close()
		// The allocations beside it (go tool pprof -sample_index=alloc_space): the hot
		// path's garbage is what the GC's share of a trigger's CPU comes from.
		if af, err := os.Create(path + ".allocs"); err == nil {
			_ = pprof.Lookup("allocs").WriteTo(af, 0)
			af.Close()
		}
	}, nil
}

// Trace writes an execution trace of the daemon to path until stop is called (the hidden
// serve --trace; go tool trace: the hot path marks its stages as trace regions).
func Trace(path string) (stop func(), err error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("trace: %w", err)
	}
	if err := trace.Start(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("trace: %w", err)
	}
	return func() { trace.Stop(); f.Close() }, nil
}
