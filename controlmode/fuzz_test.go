package controlmode

import (
	"bytes"
	"testing"
	"time"
)

// FuzzReadLoop feeds arbitrary tmux output to a Conn with commands pending: it must
// never panic or hang, must end with Done closed, and must fail or answer every command.
func FuzzReadLoop(f *testing.F) {
	for _, name := range []string{"garbage.txt", "block-notification.txt", "late-attach.txt",
		"exit-too-far-behind.txt"} {
		var b bytes.Buffer
		for _, s := range readTranscriptF(f, name).steps {
			if !s.send {
				b.WriteString(s.line + "\n")
			}
		}
		f.Add(b.Bytes())
	}
	f.Add([]byte("%begin 1 1 1\n%pause %1\n%exit\n"))
	f.Add([]byte("%extended-output %1 0 : \xe6\n%output %1 \\227\\245 ok\n%begin 1 2 1\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		c := newConn(Config{Session: "s", MaxLine: 64, MaxReplyLine: 128}, bytes.NewReader(data), &sink{})
		calls := []*Call{c.Go("display -p a"), c.Go("display -p b")}
		go c.run()
		select {
		case <-c.Done():
		case <-time.After(10 * time.Second):
			t.Fatal("read loop did not end at EOF")
		}
		for _, call := range calls {
			select {
			case <-call.Done:
			default:
				t.Fatalf("call %q neither answered nor failed", call.Cmd)
			}
		}
		if c.Err() == nil {
			t.Fatal("Err() is nil after EOF")
		}
	})
}
