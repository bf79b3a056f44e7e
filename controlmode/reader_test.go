package controlmode

import (
	"errors"
	"io"
	"strings"
	"testing"
)

func reader(s string) *Reader { return NewReader(strings.NewReader(s)) }

func TestReaderLines(t *testing.T) {
	long := strings.Repeat("x", 3*readBufferSize)
	r := reader("a\r\nb\n\nlong " + long + "\n" + strings.Repeat("y", 100) + "\nlast")
	r.MaxLine = 2*readBufferSize + 10
	want := []struct {
		line string
		err  error
	}{
		{"a", nil}, {"b", nil}, {"", nil}, {"", ErrLineTooLong},
		{strings.Repeat("y", 100), nil}, {"", io.ErrUnexpectedEOF}, {"", io.EOF},
	}
	for i, w := range want {
		line, err := r.ReadLine()
		if string(line) != w.line || !errors.Is(err, w.err) {
			t.Errorf("#%d: got %q, %v, want %q, %v", i, line, err, w.line, w.err)
		}
	}
}

func TestReaderLongLineWithinCap(t *testing.T) {
	long := strings.Repeat("z", 5*readBufferSize)
	r := reader(long + "\r\nnext\n")
	r.MaxLine = len(long)
	if line, err := r.ReadLine(); err != nil || string(line) != long {
		t.Fatalf("got %d bytes, %v, want %d bytes", len(line), err, len(long))
	}
	if line, err := r.ReadLine(); err != nil || string(line) != "next" {
		t.Fatalf("got %q, %v, want %q", line, err, "next")
	}
}

func TestReaderReadLineNoAlloc(t *testing.T) {
	data := strings.Repeat("%output %1 hello\\015\\012\n", 2000)
	r := reader(data)
	allocs := testing.AllocsPerRun(1000, func() {
		if _, err := r.ReadLine(); err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 0 {
		t.Errorf("ReadLine allocated %v times per line", allocs)
	}
}
