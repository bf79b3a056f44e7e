package benchmarks

import (
	"bufio"
	"bytes"
	"io"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nudgehq/nudge/controlmode"
)

// Decode throughput of the control-mode read path, beside the obvious alternative
// (bufio.Scanner, a string per line, strings.SplitN, a new []byte per decoded line) in
// the same run. Each op is one %output line; allocs/op must be 0 for the Conn.

// outputLine is a realistic %output line: what `yes 0123456789abcdef` gives (the
// reference's method D), cut at ~2.8 KB as tmux cuts its writes.
var outputLine = func() []byte {
	raw := bytes.Repeat([]byte("0123456789abcdef\r\n"), 150)
	return append(controlmode.Escape([]byte("%output %3 "), raw), '\n')
}()

// mixedLine adds escape sequences and UTF-8 (including a character cut at the end).
var mixedLine = func() []byte {
	raw := []byte(strings.Repeat("\x1b[1;32mok\x1b[0m build café 日本語 \\ done\r\n", 60) + "\xe6\x97")
	return append(controlmode.Escape([]byte("%extended-output %3 12 : "), raw), '\n')
}()

// repeatReader yields line n times without allocating.
type repeatReader struct {
	line []byte
	n    int
	off  int
}

func (r *repeatReader) Read(p []byte) (int, error) {
	total := 0
	for len(p) > 0 {
		if r.n == 0 {
			if total == 0 {
				return 0, io.EOF
			}
			break
		}
		k := copy(p, r.line[r.off:])
		p, total, r.off = p[k:], total+k, r.off+k
		if r.off == len(r.line) {
			r.off, r.n = 0, r.n-1
		}
	}
	return total, nil
}

func benchConn(b *testing.B, line []byte) {
	var decoded int
	cfg := controlmode.Config{OnOutput: func(_ int, data []byte, _ time.Duration) { decoded += len(data) }}
	b.SetBytes(int64(len(line)))
	b.ReportAllocs()
	b.ResetTimer()
	c := controlmode.NewConn(cfg, &repeatReader{line: line, n: b.N}, io.Discard)
	<-c.Done()
	b.StopTimer()
	if got := c.Stats().OutputLines; got != uint64(b.N) {
		b.Fatalf("decoded %d lines, want %d", got, b.N)
	}
	b.ReportMetric(float64(decoded)/b.Elapsed().Seconds()/1e6, "decoded-MB/s")
}

func BenchmarkControlmodeDecode(b *testing.B) {
	b.Run("Conn/output", func(b *testing.B) { benchConn(b, outputLine) })
	b.Run("Conn/extended-mixed", func(b *testing.B) { benchConn(b, mixedLine) })
	b.Run("Naive/output", func(b *testing.B) { benchNaive(b, outputLine) })
	b.Run("Naive/extended-mixed", func(b *testing.B) { benchNaive(b, mixedLine) })
}

// benchNaive is the obvious decoder: Scanner, string lines, SplitN, a fresh slice.
func benchNaive(b *testing.B, line []byte) {
	b.SetBytes(int64(len(line)))
	b.ReportAllocs()
	b.ResetTimer()
	sc := bufio.NewScanner(&repeatReader{line: line, n: b.N})
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	decoded, lines := 0, 0
	for sc.Scan() {
		s := sc.Text()
		var data string
		switch {
		case strings.HasPrefix(s, "%output "):
			data = strings.SplitN(s, " ", 3)[2]
		case strings.HasPrefix(s, "%extended-output "):
			_, data, _ = strings.Cut(s, " : ")
		default:
			continue
		}
		out := make([]byte, 0, len(data))
		for i := 0; i < len(data); i++ {
			if data[i] == '\\' && i+3 < len(data) {
				v, err := strconv.ParseUint(data[i+1:i+4], 8, 8)
				if err == nil {
					out = append(out, byte(v))
					i += 3
					continue
				}
			}
			out = append(out, data[i])
		}
		decoded += len(out)
		lines++
	}
	if lines != b.N {
		b.Fatalf("decoded %d lines, want %d", lines, b.N)
	}
	b.ReportMetric(float64(decoded)/b.Elapsed().Seconds()/1e6, "decoded-MB/s")
}

// BenchmarkControlmodeUnescape is the unescaper alone, in memory (the reference's
// "Go unescape alone": 794/758 MB/s decoded).
func BenchmarkControlmodeUnescape(b *testing.B) {
	src := outputLine[len("%output %3 ") : len(outputLine)-1]
	dst := make([]byte, 0, len(src))
	b.SetBytes(int64(len(src)))
	b.ReportAllocs()
	var n int
	for i := 0; i < b.N; i++ {
		dst = controlmode.Unescape(dst[:0], src)
		n += len(dst)
	}
	b.ReportMetric(float64(n)/b.Elapsed().Seconds()/1e6, "decoded-MB/s")
}
