package controlmode

import (
	"bytes"
	"context"
	"math/rand"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// hostile holds text that would run a second tmux command, expand a format, variable or
// home directory, open a block or a directive, or break a line if it were not quoted.
var hostile = []string{
	"plain",
	"a;b ; display -p PWNED ;",
	"'; kill-server; '",
	`"; kill-server; "`,
	"#{pane_id} #{session_name} #(echo PWNED)",
	"$HOME ${HOME} ~ ~root",
	"{ display PWNED } }{",
	`\ \\ \; \' \" \n`,
	"it's a 'quoted' \"string\"",
	"%if 1\n%endif",
	"trailing;",
	"é 日本語 😀 ünïcödé",
	"\xff\xfe\x80 invalid \xc3 utf-8 \xe6\x97",
	"ctl \x01\x03\x04\x1a\x1b[A\x7f\t end",
	"cr\r lf\n nul\x00 crlf\r\n",
	"-l -- -H 0d",
	"",
}

// TestSendKeysByteExact types hostile text into a pane whose program (cat on a raw tty)
// writes every byte it reads to a file, and checks the file holds exactly the text and
// that no second tmux command ran.
func TestSendKeysByteExact(t *testing.T) {
	checkGoroutines(t)
	dir := t.TempDir()
	out, ready := filepath.Join(dir, "out"), filepath.Join(dir, "ready")
	srv := newServer(t, "sh", "-c", "stty raw -echo -iexten && touch "+ready+" && exec cat >"+out)
	c := dial(t, srv.config())
	waitFor(t, func() bool { _, err := os.Stat(ready); return err == nil })

	var want []byte
	for i, text := range hostile {
		lines := SendKeys("%0", text)
		if _, err := c.DoAll(context.Background(), lines...); err != nil {
			t.Fatalf("#%d: %q: %v", i, text, err)
		}
		want = append(want, text...)
		waitFor(t, func() bool { b, _ := os.ReadFile(out); return len(b) >= len(want) })
		got, _ := os.ReadFile(out)
		if !bytes.Equal(got, want) {
			t.Fatalf("#%d: pane read %q, want %q", i, got[min(len(got), len(want)-len(text)):], text)
		}
	}
	// A second command would have desynchronised the replies, created a window or
	// killed the server.
	if got := do(t, c, "display -p 'sync #{session_windows}'"); len(got) != 1 || got[0] != "sync 1" {
		t.Errorf("after typing: got %q, want [\"sync 1\"]", got)
	}
	if st := c.Stats(); st.Unsolicited != 1 || st.CommandErrors != 0 {
		t.Errorf("stats: %+v", st)
	}
	if got := srv.run("list-sessions", "-F", "#{session_name}"); got != "s" {
		t.Errorf("sessions: %q", got)
	}
}

// TestQuoteAgainstTmux checks that tmux parses each quoted string back to exactly the
// input: set-buffer takes the quoted argument, show-buffer prints it back.
func TestQuoteAgainstTmux(t *testing.T) {
	checkGoroutines(t)
	srv := newServer(t, "sleep", "600")
	c := dial(t, srv.config())
	samples := []string{"", "x", " ", "'", "''", `'\''`, "a'b'c", `\`, `\\'`, "#", "#{", "}", ";"}
	for _, h := range hostile {
		if _, err := Quote(h); err == nil {
			samples = append(samples, h)
		}
	}
	rng := rand.New(rand.NewSource(time.Now().UnixNano()))
	const alphabet = "ab ;'\"\\#{}$~%-é\t"
	for i := 0; i < 200; i++ {
		var b strings.Builder
		for j := rng.Intn(12); j > 0; j-- {
			r := []rune(alphabet)
			b.WriteRune(r[rng.Intn(len(r))])
		}
		samples = append(samples, b.String())
	}
	file := filepath.Join(t.TempDir(), "buffer")
	qfile, _ := Quote(file)
	for i, s := range samples {
		q, err := Quote(s)
		if err != nil {
			t.Fatalf("#%d: Quote(%q): %v", i, s, err)
		}
		os.Remove(file)
		// save-buffer writes the buffer raw (show-buffer would vis-encode it).
		set, save := "set-buffer -b q -- "+q, "save-buffer -b q "+qfile
		if s == "" { // tmux keeps no empty buffer; an empty option checks ''
			set, save = "set-option -g @q "+q, "show-options -gqv @q"
		}
		replies, err := c.DoAll(context.Background(), set, save)
		if err != nil {
			t.Fatalf("#%d: %q (quoted %s): %v", i, s, q, err)
		}
		got := strings.Join(replies[1].Lines, "")
		if s != "" {
			b, err := os.ReadFile(file)
			if err != nil {
				t.Fatalf("#%d: %v", i, err)
			}
			got = string(b)
		}
		if got != s {
			t.Errorf("#%d: got %q, want %q (quoted %s)", i, got, s, q)
		}
	}
}
