package panereader

import (
	"bufio"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Stamp is one report from a reader: Kind is "m" (a marker was read), "enter" (a CR was
// read) or "w" (a requested write finished); Tag is the marker or the write's tag; TS is
// the reader's CLOCK_MONOTONIC in ns.
type Stamp struct {
	Kind, Tag string
	TS        int64
}

// Pane is the harness's handle on one connected reader. Stamps is closed when the reader
// goes away.
type Pane struct {
	Name   string
	PID    int
	Stamps <-chan Stamp
	conn   net.Conn
	mu     sync.Mutex
}

// Send writes one command line to the reader ("print TAG TEXT", "stream 10ms", "quiet",
// "burst TAG N INTERVAL").
func (p *Pane) Send(cmd string) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	_, err := fmt.Fprintln(p.conn, cmd)
	return err
}

// Close drops the connection; the reader then exits.
func (p *Pane) Close() error { return p.conn.Close() }

// Listener accepts readers on a unix socket. Close stops it.
type Listener struct {
	ln    net.Listener
	mu    sync.Mutex
	panes map[string]*Pane
	added chan struct{} // closed and replaced when a reader connects
}

// Listen starts accepting readers on sock.
func Listen(sock string) (*Listener, error) {
	ln, err := net.Listen("unix", sock)
	if err != nil {
		return nil, err
	}
	l := &Listener{ln: ln, panes: map[string]*Pane{}, added: make(chan struct{})}
	go l.accept()
	return l, nil
}

// Close stops accepting and drops every reader.
func (l *Listener) Close() error {
	err := l.ln.Close()
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, p := range l.panes {
		p.conn.Close()
	}
	return err
}

func (l *Listener) accept() {
	for {
		c, err := l.ln.Accept()
		if err != nil {
			return
		}
		go l.serve(c)
	}
}

func (l *Listener) serve(c net.Conn) {
	br := bufio.NewReader(c)
	hello, err := br.ReadString('\n')
	f := strings.Fields(hello)
	if err != nil || len(f) != 3 || f[0] != "hello" {
		c.Close()
		return
	}
	pid, _ := strconv.Atoi(f[2])
	ch := make(chan Stamp, 4096)
	p := &Pane{Name: f[1], PID: pid, Stamps: ch, conn: c}
	l.mu.Lock()
	l.panes[p.Name] = p
	close(l.added)
	l.added = make(chan struct{})
	l.mu.Unlock()
	defer close(ch)
	for {
		line, err := br.ReadString('\n')
		if err != nil {
			return
		}
		f := strings.Fields(line)
		var s Stamp
		switch {
		case len(f) == 3:
			s.Kind, s.Tag = f[0], f[1]
			s.TS, _ = strconv.ParseInt(f[2], 10, 64)
		case len(f) == 2:
			s.Kind = f[0]
			s.TS, _ = strconv.ParseInt(f[1], 10, 64)
		default:
			continue
		}
		select {
		case ch <- s:
		default: // nobody is reading this pane's stamps: drop
		}
	}
}

// Wait returns the reader called name once it has connected, or an error after timeout.
func (l *Listener) Wait(name string, timeout time.Duration) (*Pane, error) {
	deadline := time.After(timeout)
	for {
		l.mu.Lock()
		p, ok := l.panes[name]
		added := l.added
		l.mu.Unlock()
		if ok {
			return p, nil
		}
		select {
		case <-added:
		case <-deadline:
			return nil, fmt.Errorf("pane reader %s did not connect within %v", name, timeout)
		}
	}
}

// Await waits for a stamp of kind and tag ("" = any tag) from p, dropping others.
func (p *Pane) Await(kind, tag string, timeout time.Duration) (Stamp, error) {
	t := time.NewTimer(timeout)
	defer t.Stop()
	for {
		select {
		case s, ok := <-p.Stamps:
			if !ok {
				return Stamp{}, fmt.Errorf("pane reader %s went away", p.Name)
			}
			if s.Kind == kind && (tag == "" || s.Tag == tag) {
				return s, nil
			}
		case <-t.C:
			return Stamp{}, fmt.Errorf("pane %s: no %s %s within %v", p.Name, kind, tag, timeout)
		}
	}
}

// Drain discards stamps already queued.
func (p *Pane) Drain() {
	for {
		select {
		case _, ok := <-p.Stamps:
			if !ok {
				return
			}
		default:
			return
		}
	}
}
