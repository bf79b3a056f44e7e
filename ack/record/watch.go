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
	sharedOnce sync.Once
	shared     *hub
	sharedErr  error
)

// watcher returns the process's hub, starting it once.
func watcher() (*hub, error) {
	sharedOnce.Do(func() {
		w, err := fsnotify.NewWatcher()
		if err != nil {
			sharedErr = err
			return
		}
		shared = &hub{w: w, subs: map[string]map[*sub]struct{}{}}
		go shared.run()
	})
	return shared, sharedErr
}

func (h *hub) run() {
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

// close ends s: its directories are no longer watched for it.
func (s *sub) close() {
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
