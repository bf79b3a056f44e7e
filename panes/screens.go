package panes

import (
	"sync"
	"time"
)

// Screen is what Tail shows of a runtime's pane: its last lines, live, or, once the pane
// is gone (the runtime was stopped, or its pane closed), the last screen kept of it.
type Screen struct {
	Lines []string
	// Gone: the pane no longer exists; Lines are the last kept (none if nudge kept none:
	// the pane closed while no daemon ran) and KeptAt says when they were captured.
	Gone   bool
	KeptAt time.Time
}

// screenKeeper keeps the last screen of panes nudge itself closes (a stop), so `nudge
// tail` of a stopped runtime still shows how it ended. It owns its own lock; the screens
// live in memory only, bounded by keptScreenLines a runtime.
type screenKeeper struct {
	mu sync.Mutex
	m  map[string]Screen // runtime id -> its last screen
}

// keptScreenLines bounds one kept screen.
const keptScreenLines = 500

func (k *screenKeeper) keep(id string, lines []string, at time.Time) {
	if len(lines) > keptScreenLines {
		lines = lines[len(lines)-keptScreenLines:]
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.m == nil {
		k.m = map[string]Screen{}
	}
	k.m[id] = Screen{Lines: lines, Gone: true, KeptAt: at}
}

// last returns the kept screen of id, at most n lines (Gone set; empty if none).
func (k *screenKeeper) last(id string, n int) Screen {
	k.mu.Lock()
	s := k.m[id]
	k.mu.Unlock()
	s.Gone = true
	if len(s.Lines) > n {
		s.Lines = s.Lines[len(s.Lines)-n:]
	}
	return s
}

// drop forgets id's screen (its runtime has a live pane again).
func (k *screenKeeper) drop(id string) {
	k.mu.Lock()
	delete(k.m, id)
	k.mu.Unlock()
}
