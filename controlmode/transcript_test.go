package controlmode

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"
	"unicode/utf8"
)

var (
	attachBlock = `Unsolicited [] error=false`
	attached    = `SessionChanged {ID:0 Name:s}`
	bareExit    = `Exit {Reason:}`
)

func TestTranscripts(t *testing.T) {
	tests := []struct {
		file    string
		replies []string
		events  []string
		written string // what the client wrote; "" = exactly the transcript's sends
		err     func(error) bool
	}{
		{
			file:    "block-notification.txt",
			replies: []string{`reply []`, `reply []`, `reply ["after"]`},
			events:  []string{attachBlock, attached, `Pause {Pane:0}`, `Continue {Pane:0}`, bareExit},
			// The %pause inside the first block is answered with a continue.
			written: "refresh-client -A '%0:pause'\nrefresh-client -A '%0:continue'\n" +
				"display -p after\nrefresh-client -A '%0:continue'\n",
			err: isExit(""),
		},
		{
			file: "parse-error.txt",
			replies: []string{`error: tmux "foo-bar": parse error: unknown command: foo-bar`,
				`reply ["unterminated"]`, `reply ["%end %0"]`, `reply ["last"]`},
			events: []string{attachBlock, attached, bareExit},
			err:    isExit(""),
		},
		{
			file:    "hook-block.txt",
			replies: []string{`reply ["first"]`, `reply []`, `reply ["second"]`},
			events: []string{attachBlock, attached, `Unsolicited ["HOOKOUT"] error=false`,
				`WindowAdd {Window:1}`, `WindowRenamed {Window:1 Name:tmux}`, bareExit},
			err: isExit(""),
		},
		{
			file:    "late-attach.txt",
			replies: []string{`reply ["one"]`, `reply ["two"]`},
			events:  []string{attachBlock, attached},
			err:     func(err error) bool { return errors.Is(err, io.ErrUnexpectedEOF) },
		},
		{
			file:    "late-attach-recorded.txt",
			replies: []string{`reply ["first"]`, `reply []`, `reply ["second"]`},
			events: []string{`Unsolicited ["HOOKOUT"] error=false`, attachBlock, attached,
				bareExit},
			err: isExit(""),
		},
		{
			file:    "exit-too-far-behind.txt",
			replies: []string{`error: tmux control client exited: too far behind`},
			events:  []string{attachBlock, attached, `Exit {Reason:too far behind}`},
			err:     isExit("too far behind"),
		},
		{
			file:    "no-session.txt",
			replies: []string{`reply ["never"]`},
			events:  []string{`Unsolicited ["can't find session: nosuch"] error=true`, bareExit},
			err:     isExit(""),
		},
		{
			file:    "window-names.txt",
			replies: []string{`reply []`, `reply []`, `reply []`, `reply []`, `reply ["done"]`},
			events: []string{attachBlock, attached, "WindowRenamed {Window:0 Name:tab\tx\\y}",
				`SessionWindowChanged {Session:0 Window:1}`, `WindowAdd {Window:1}`,
				`SessionRenamed {ID:0 Name:sé ss}`,
				`SubscriptionChanged {Name:sub Session:0 Window:0 WindowIndex:0 Pane:0 Value:%0:0}`,
				`SubscriptionChanged {Name:sub Session:0 Window:1 WindowIndex:1 Pane:1 Value:%1:0}`,
				bareExit},
			err: isExit(""),
		},
		{
			file:    "garbage.txt",
			replies: []string{`reply ["ok" "%end 1795305700 270 0"]`},
			events: []string{attachBlock, attached,
				`Unknown {Line:hello from nowhere}`, `Unknown {Line:%}`, `Unknown {Line:%output}`,
				`Unknown {Line:%output %x data}`, `Unknown {Line:%extended-output %0 12 no-separator}`,
				`Unknown {Line:%window-add @}`, `Unknown {Line:%window-add 7}`,
				`Unknown {Line:%end 1795305700 999 1}`, `Unknown {Line:%begin 17953 not-a-number 1}`,
				`Unknown {Line:%future-notification with args}`,
				`Unknown {Line:%subscription-changed}`, `Unknown {Line:%layout-change @1}`},
			err: func(err error) bool { return errors.Is(err, io.ErrUnexpectedEOF) },
		},
	}
	for _, tt := range tests {
		t.Run(strings.TrimSuffix(tt.file, ".txt"), func(t *testing.T) {
			tr := readTranscript(t, tt.file)
			h := newHarness(t, Config{})
			calls := h.play(t, tr)
			for i, call := range calls {
				if i >= len(tt.replies) {
					t.Errorf("#%d: unexpected call %q", i, call.Cmd)
					continue
				}
				if got := outcome(call); got != tt.replies[i] {
					t.Errorf("reply #%d: got %q, want %q", i, got, tt.replies[i])
				}
			}
			events := h.eventLog()
			for i := 0; i < max(len(events), len(tt.events)); i++ {
				var got, want string
				if i < len(events) {
					got = events[i]
				}
				if i < len(tt.events) {
					want = tt.events[i]
				}
				if got != want {
					t.Errorf("event #%d: got %q, want %q", i, got, want)
				}
			}
			want := tt.written
			if want == "" {
				for _, s := range tr.steps {
					if s.send {
						want += s.line + "\n"
					}
				}
			}
			if got := h.stdin.all(); got != want {
				t.Errorf("written: got %q, want %q", got, want)
			}
			if err := h.c.Err(); !tt.err(err) {
				t.Errorf("Err() = %v", err)
			}
		})
	}
}

func isExit(reason string) func(error) bool {
	return func(err error) bool {
		var e *ExitError
		return errors.As(err, &e) && e.Reason == reason
	}
}

func TestTranscriptGarbageStats(t *testing.T) {
	h := newHarness(t, Config{})
	h.play(t, readTranscript(t, "garbage.txt"))
	st := h.c.Stats()
	if st.Malformed != 9 || st.Unknown != 12 || st.OutputLines != 1 || st.OutputBytes != 6 {
		t.Errorf("stats: got %+v", st)
	}
	if got := string(h.output[0]); got != "fine\r\n" {
		t.Errorf("output: got %q, want %q", got, "fine\r\n")
	}
}

// TestTranscriptOutput8bit checks every byte value survives %output: the pane's program
// wrote output-8bit.bin, which the tty turned \n into \r\n.
func TestTranscriptOutput8bit(t *testing.T) {
	h := newHarness(t, Config{})
	h.play(t, readTranscript(t, "output-8bit.txt"))
	want := bytes.ReplaceAll(readFile(t, "output-8bit.bin"), []byte("\n"), []byte("\r\n"))
	if got := h.output[0]; !bytes.Equal(got, want) {
		t.Errorf("pane 0 output:\ngot  %q\nwant %q", got, want)
	}
}

// TestTranscriptSplitUTF8 checks that characters tmux cut across %extended-output lines
// are joined: every chunk handed to OnOutput is valid UTF-8 and the whole is exact.
func TestTranscriptSplitUTF8(t *testing.T) {
	tr := readTranscript(t, "output-utf8.txt")
	split := 0
	for _, s := range tr.steps {
		if _, _, data, ok := extendedOutputHeader([]byte(strings.TrimPrefix(s.line,
			"%extended-output "))); ok && !utf8.Valid(Unescape(nil, data)) {
			split++
		}
	}
	if split == 0 {
		t.Fatal("transcript has no line cut inside a character; re-record it")
	}
	h := newHarness(t, Config{})
	h.play(t, tr)
	if got, want := h.output[0], readFile(t, "output-utf8.bin"); !bytes.Equal(got, want) {
		t.Errorf("pane 0 output: got %d bytes, want %d bytes", len(got), len(want))
	}
	for i, c := range h.chunks {
		if !utf8.Valid(c) {
			t.Errorf("chunk #%d of %d is not valid UTF-8: %q", i, len(h.chunks), c)
		}
	}
	t.Logf("%d of the transcript's lines were cut inside a character", split)
}
