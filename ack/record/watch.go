package record

import (
	"errors"
	"path/filepath"
	"sync"

	"github.com/fsnotify/fsnotify"
)

// One file-event watcher serves every follower of the process: each fsnotify.Watcher is
// an inotify instance on Linux, and a user has 128 of them by default, fewer than a fleet
// of runtimes. Followers subscribe to directories; the hub adds a directory to the watcher
// while anyone follows it and hands each event to the subscribers of its directory.

// hub is the shared watcher.
type hub struct {
	mu   sync.Mutex
	w    *fsnotify.Watcher
	subs map[string]map[*sub]struct{} // directory → its subscribers
	err  error                        // the watcher's last error, for subscribers that ask
	refs int                          // followers holding it (sharedMu)
	done chan struct{}                // closed when run returns
}

// sub is one follower's subscription: events of its directories, and an overflow flag
// (set when its buffer was full: it must read its file again).
type sub struct {
	h      *hub
	ev     chan fsnotify.Event
	missed chan struct{} // signalled when an event could not be delivered (buffer full)
	dirs   map[string]bool
}

var (
	sharedMu sync.Mutex
	shared   *hub
)

// watcher returns the process's hub, started by the first follower that needs it and
// ended (its watcher closed, its goroutine joined) when the last one closes.
func watcher() (*sub, error) {
	sharedMu.Lock()
	defer sharedMu.Unlock()
	if shared == nil {
		w, err := fsnotify.NewWatcher()
		if err != nil {
			return nil, err
		}
		shared = &hub{w: w, subs: map[string]map[*sub]struct{}{}, done: make(chan struct{})}
		go shared.run()
	}
	shared.refs++
	return shared.subscribe(), nil
}

// release drops one follower's hold on h; the last one ends it.
func (h *hub) release() {
	sharedMu.Lock()
	defer sharedMu.Unlock()
	if h.refs--; h.refs > 0 {
		return
	}
	if shared == h {
		shared = nil
	}
	h.w.Close()
	<-h.done
}

func (h *hub) run() {
	defer close(h.done)
	for {
		select {
		case e, ok := <-h.w.Events:
			if !ok {
				return
			}
			h.mu.Lock()
			for s := range h.subs[filepath.Dir(filepath.Clean(e.Name))] {
				s.deliver(e)
			}
			for s := range h.subs[filepath.Clean(e.Name)] { // an event on a watched directory itself
				s.deliver(e)
			}
			h.mu.Unlock()
		case err, ok := <-h.w.Errors:
			if !ok {
				return
			}
			h.mu.Lock()
			h.err = err
			for _, ss := range h.subs {
				for s := range ss {
					s.overflow() // events may be lost: everyone looks again
				}
			}
			h.mu.Unlock()
		}
	}
}

// subscribe returns a subscription with no directory yet.
func (h *hub) subscribe() *sub {
	return &sub{h: h, ev: make(chan fsnotify.Event, 64), missed: make(chan struct{}, 1), dirs: map[string]bool{}}
}

func (s *sub) deliver(e fsnotify.Event) {
	select {
	case s.ev <- e:
	default:
		s.overflow()
	}
}

func (s *sub) overflow() {
	select {
	case s.missed <- struct{}{}:
	default:
	}
}

// add watches dir for s.
func (s *sub) add(dir string) error {
	dir = filepath.Clean(dir)
	if s.dirs[dir] {
		return nil
	}
	h := s.h
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.subs[dir]) == 0 {
		if err := h.w.Add(dir); err != nil {
			return err
		}
		h.subs[dir] = map[*sub]struct{}{}
	}
	h.subs[dir][s] = struct{}{}
	s.dirs[dir] = true
	return nil
}

// close ends s: its directories are no longer watched for it, and its hold on the hub
// is released.
func (s *sub) close() {
	s.unwatch()
	s.h.release()
}

func (s *sub) unwatch() {
	h := s.h
	h.mu.Lock()
	defer h.mu.Unlock()
	for dir := range s.dirs {
		delete(h.subs[dir], s)
		if len(h.subs[dir]) == 0 {
			delete(h.subs, dir)
			if err := h.w.Remove(dir); err != nil && !errors.Is(err, fsnotify.ErrNonExistentWatch) {
				h.err = err
			}
		}
	}
	s.dirs = map[string]bool{}
}
