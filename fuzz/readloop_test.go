package fuzz

import (
	"bufio"
	"bytes"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nudgehq/nudge/controlmode"
)

// FuzzReadLoop feeds arbitrary tmux output to a Conn with commands pending: it must
// never panic or hang, must end with Done closed, and must answer or fail every command.
func FuzzReadLoop(f *testing.F) {
	for _, name := range []string{"garbage.txt", "block-notification.txt", "late-attach.txt", "exit-too-far-behind.txt"} {
		f.Add(transcriptOutput(f, name))
	}
	// corpus:
	f.Add([]byte("%begin 1 1 1\n%pause %1\n%exit\n"))
	f.Add([]byte("%extended-output %1 0 : \xe6\n%output %1 \\227\\245 ok\n%begin 1 2 1\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		pr, pw := io.Pipe()
		c := controlmode.NewConn(controlmode.Config{Session: "s", MaxLine: 64, MaxReplyLine: 128}, pr, io.Discard)
		calls := []*controlmode.Call{c.Go("display -p a"), c.Go("display -p b")}
		go func() {
			pw.Write(data)
			pw.Close()
		}()
		select {
		case <-c.Done():
		case <-time.After(10 * time.Second):
			t.Fatal("read loop did not end at EOF")
		}
		for _, call := range calls {
			select {
			case <-call.Done:
			case <-time.After(10 * time.Second):
				t.Fatalf("call %q neither answered nor failed", call.Cmd)
			}
		}
		if c.Err() == nil {
			t.Fatal("Err() is nil after EOF")
		}
		c.Close()
	})
}

// transcriptOutput is what tmux wrote in one of controlmode's recorded transcripts
// (lines starting "< ").
func transcriptOutput(t testing.TB, name string) []byte {
	t.Helper()
	file, err := os.Open(filepath.Join("..", "controlmode", "testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	defer file.Close()
	var b bytes.Buffer
	sc := bufio.NewScanner(file)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		if l, ok := strings.CutPrefix(sc.Text(), "< "); ok {
			b.WriteString(l + "\n")
		}
	}
	return b.Bytes()
}
