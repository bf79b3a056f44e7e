package retention

import (
	"bytes"
	"strings"
	"testing"

	"github.com/hashicorp/go-hclog"
)

// watch returns a Watch of a file whose size is *size, bound 1000, logging to the
// returned buffer.
func watch(size *int64) (*Watch, *bytes.Buffer) {
	var buf bytes.Buffer
	w := newWatch("/state/nudge.db", 1000, hclog.New(&hclog.LoggerOptions{Output: &buf, Level: hclog.Debug}))
	w.size = func(string) int64 { return *size }
	return w, &buf
}

// The store file is warned about once when it crosses the bound, not at every check
// while it stays past it, again when it has grown a quarter further, with an info line
// when it is back under, and again when it crosses once more.
func TestWatch(t *testing.T) {
	var size int64
	w, buf := watch(&size)
	steps := []struct {
		size int64
		want string // the line logged at this check; "" none
	}{
		{500, ""},
		{1000, ""}, // at the bound is not past it
		{1001, "[WARN]  store file is past --store-warn-size: shorten serve --retain"},
		{1001, ""},
		{1200, ""},
		{1250, ""}, // 1001 + 1001/4 = 1251
		{1251, "[WARN]  store file is still growing past --store-warn-size (1001 bytes when last warned)"},
		{1500, ""},
		{1564, "[WARN]  store file is still growing past --store-warn-size (1251 bytes when last warned)"},
		{900, "[INFO]  store file is back under --store-warn-size"},
		{900, ""},
		{1100, "[WARN]  store file is past --store-warn-size"},
		{1100, ""},
	}
	for i, s := range steps {
		size = s.size
		buf.Reset()
		w.Check()
		got := strings.TrimSpace(buf.String())
		switch {
		case s.want == "" && got != "":
			t.Errorf("#%d: size %d logged %q, want nothing", i, s.size, got)
		case s.want != "" && !strings.Contains(got, s.want):
			t.Errorf("#%d: size %d logged %q, want %q", i, s.size, got, s.want)
		case s.want != "" && strings.Count(got, "\n") > 0:
			t.Errorf("#%d: size %d logged more than one line: %q", i, s.size, got)
		}
		if s.want != "" && !strings.Contains(got, "bound=1000") {
			t.Errorf("#%d: %q does not give the bound", i, got)
		}
	}
}

// Without a bound nothing is ever logged, however big the file.
func TestWatchNoBound(t *testing.T) {
	size := int64(1 << 40)
	w, buf := watch(&size)
	w.Bound = 0
	w.Check()
	w.Opened(0)
	if buf.Len() != 0 {
		t.Fatalf("logged %q without a bound", buf.String())
	}
}

// Opened logs a compaction (the file shrank while the store opened) and checks the size
// at once: a file still past the bound after it is warned about at start.
func TestWatchOpened(t *testing.T) {
	size := int64(1500)
	w, buf := watch(&size)
	w.Opened(4000)
	out := buf.String()
	if !strings.Contains(out, "store compacted at start") || !strings.Contains(out, "bytes_before=4000 bytes_after=1500") {
		t.Errorf("no compaction line in %q", out)
	}
	if !strings.Contains(out, "store file is past --store-warn-size") {
		t.Errorf("no warning at start in %q", out)
	}
	buf.Reset()
	w.Check()
	if buf.Len() != 0 {
		t.Errorf("the first pass after the start warned again: %q", buf.String())
	}
}
