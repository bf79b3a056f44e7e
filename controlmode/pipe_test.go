package controlmode

import (
	"bytes"
	"errors"
	"io"
	"os"
	"testing"
	"time"
)

// The read loop's reader of an os.Pipe reads what was written, waits for more when the
// pipe is empty, ends with io.EOF when the writer closes, and returns at once with an
// error when the pipe is closed under a waiting read (Conn.Close on a frozen tmux).
func TestPipeReader(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	pr := pipeFrom(r)
	if _, plain := pr.(*os.File); plain == rawPipeReads {
		t.Fatalf("pipeFrom gave a %T", pr)
	}
	go func() {
		w.Write([]byte("%output %1 a\n"))
		time.Sleep(20 * time.Millisecond) // the reader waits in the poller meanwhile
		w.Write([]byte("%output %1 b\n"))
		w.Close()
	}()
	got, err := io.ReadAll(pr)
	if err != nil || string(got) != "%output %1 a\n%output %1 b\n" {
		t.Fatalf("read %q, %v", got, err)
	}

	r2, w2, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer w2.Close()
	pr2 := pipeFrom(r2)
	done := make(chan error, 1)
	go func() {
		_, err := pr2.Read(make([]byte, 16))
		done <- err
	}()
	time.Sleep(20 * time.Millisecond)
	r2.Close()
	select {
	case err := <-done:
		if err == nil || errors.Is(err, io.EOF) {
			t.Fatalf("read after close: %v, want an error", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a read waiting on a pipe closed under it did not return")
	}
}

// A Conn over a pipe reads through pipeFrom's reader: the lines a fake tmux writes reach
// the connection, and the end of the pipe ends it.
func TestConnOverPipe(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	var sink bytes.Buffer
	c := NewConn(Config{}, r, nopWriteCloser{&sink})
	w.Write([]byte("%begin 1 1 0\n%end 1 1 0\n%session-changed $0 s\n%exit\n"))
	w.Close()
	select {
	case <-c.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("the connection did not end with its pipe")
	}
	var ee *ExitError
	if !errors.As(c.Err(), &ee) {
		t.Fatalf("Err() = %v, want an ExitError", c.Err())
	}
}

type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }
