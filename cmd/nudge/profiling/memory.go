package profiling

import (
	"runtime/debug"
	"runtime/metrics"
)

// ReleaseIdleHeap returns the heap the runtime keeps after a burst to the OS, once the
// store's writer has been idle (store.Idle on the bus): the runtime's background scavenger
// keeps about 10 % over the last heap goal, which after a fan-out was several MB of a
// daemon whose live heap is ~7 MB. A forced GC plus scavenge costs a few milliseconds of
// CPU once per burst, and nothing while idle; below freeHeapFloor of free heap it is not
// worth a GC.
func ReleaseIdleHeap() {
	s := []metrics.Sample{{Name: "/memory/classes/heap/free:bytes"}}
	metrics.Read(s)
	if s[0].Value.Kind() == metrics.KindUint64 && s[0].Value.Uint64() < freeHeapFloor {
		return
	}
	debug.FreeOSMemory()
}

// freeHeapFloor is the free (unreleased) heap below which ReleaseIdleHeap does nothing.
const freeHeapFloor = 1 << 20
