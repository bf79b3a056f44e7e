package controlmode

import (
	"errors"
	"fmt"
	"testing"
	"time"
)

func TestParseLine(t *testing.T) {
	tests := []struct {
		line string
		want string // describe() of the event, or "error"
	}{
		{"%session-changed $3 my session", "SessionChanged {ID:3 Name:my session}"},
		{"%session-changed $0 a\\tb\\\\c\\nd\\040e\\303\\251", "SessionChanged {ID:0 Name:a\tb\\c\nd eé}"},
		{"%client-session-changed /dev/pts/5 $1 work", "ClientSessionChanged {Client:/dev/pts/5 ID:1 Name:work}"},
		{"%session-renamed $2 new name", "SessionRenamed {ID:2 Name:new name}"},
		{"%session-window-changed $1 @7", "SessionWindowChanged {Session:1 Window:7}"},
		{"%sessions-changed", "SessionsChanged {}"},
		{"%window-add @4", "WindowAdd {Window:4}"},
		{"%window-close @4", "WindowClose {Window:4}"},
		{"%window-renamed @4 vim main.go", "WindowRenamed {Window:4 Name:vim main.go}"},
		{"%unlinked-window-add @9", "UnlinkedWindowAdd {Window:9}"},
		{"%unlinked-window-close @9", "UnlinkedWindowClose {Window:9}"},
		{"%unlinked-window-renamed @9 x", "UnlinkedWindowRenamed {Window:9 Name:x}"},
		{"%window-pane-changed @1 %5", "WindowPaneChanged {Window:1 Pane:5}"},
		{"%layout-change @1 b25d,80x24,0,0,0 b25d,80x24,0,0,0 *", "LayoutChange {Window:1 Layout:b25d,80x24,0,0,0 VisibleLayout:b25d,80x24,0,0,0 Flags:*}"},
		{"%layout-change @1 b25d,80x24,0,0,0 b25d,80x24,0,0,0 ", "LayoutChange {Window:1 Layout:b25d,80x24,0,0,0 VisibleLayout:b25d,80x24,0,0,0 Flags:}"},
		{"%layout-change @1 b25d,80x24,0,0,0", "LayoutChange {Window:1 Layout:b25d,80x24,0,0,0 VisibleLayout: Flags:}"},
		{"%pane-mode-changed %3", "PaneModeChanged {Pane:3}"},
		{"%client-detached client-123", "ClientDetached {Client:client-123}"},
		{"%subscription-changed panes $0 @0 0 %1 : 1:0:sleep:0", "SubscriptionChanged {Name:panes Session:0 Window:0 WindowIndex:0 Pane:1 Value:1:0:sleep:0}"},
		{"%subscription-changed sess $0 - - - : s 1 s=17,", "SubscriptionChanged {Name:sess Session:0 Window:-1 WindowIndex:-1 Pane:-1 Value:s 1 s=17,}"},
		{"%subscription-changed s $0 - - - : a : b", "SubscriptionChanged {Name:s Session:0 Window:-1 WindowIndex:-1 Pane:-1 Value:a : b}"},
		{"%subscription-changed s $0 - - - future x : v", "SubscriptionChanged {Name:s Session:0 Window:-1 WindowIndex:-1 Pane:-1 Value:v}"},
		{"%subscription-changed s $0 - - - :", "SubscriptionChanged {Name:s Session:0 Window:-1 WindowIndex:-1 Pane:-1 Value:}"},
		{"%pause %2", "Pause {Pane:2}"},
		{"%continue %2", "Continue {Pane:2}"},
		{"%exit", "Exit {Reason:}"},
		{"%exit too far behind", "Exit {Reason:too far behind}"},
		{"%message hi there", "Message {Text:hi there}"},
		{"%config-error /x:1: bad", "ConfigError {Text:/x:1: bad}"},
		{"%paste-buffer-changed buffer0", "PasteBufferChanged {Name:buffer0}"},
		{"%paste-buffer-deleted buffer0", "PasteBufferDeleted {Name:buffer0}"},
		{"%begin 1795304955 265 0", "Guard {Kind:begin Time:1795304955 Number:265 Flags:0}"},
		{"%error 1 2 1\r\n", "Guard {Kind:error Time:1 Number:2 Flags:1}"},
		{"%output %1 a\\015\\012b", "Output {Pane:1 Age:0s Data:[97 13 10 98]}"},
		{"%extended-output %1 250 : x : y", "Output {Pane:1 Age:250ms Data:[120 32 58 32 121]}"},
		{"%extended-output %1 250 future : x", "Output {Pane:1 Age:250ms Data:[120]}"},
		{"%brand-new-thing 1 2", "Unknown {Line:%brand-new-thing 1 2}"},
		{"not a notification", "Unknown {Line:not a notification}"},
		{"", "Unknown {Line:}"},
		{"%window-add", "error"},
		{"%window-add @", "error"},
		{"%window-add @x", "error"},
		{"%window-add @99999999999999999999", "error"},
		{"%window-pane-changed @1", "error"},
		{"%session-changed $1", "error"},
		{"%client-session-changed c $1", "error"},
		{"%subscription-changed s $0 - - - no separator", "error"},
		{"%subscription-changed s $x - - - : v", "error"},
		{"%begin 1 2", "error"},
		{"%end a b c", "error"},
		{"%output %1", "error"},
		{"%extended-output %1 x : y", "error"},
		{"%pause 2", "error"},
	}
	for i, tt := range tests {
		ev, err := ParseLine([]byte(tt.line))
		got := "error"
		if err == nil {
			got = describe(ev)
		} else if !errors.Is(err, ErrProtocol) {
			got = fmt.Sprintf("error not ErrProtocol: %v", err)
		}
		if got != tt.want {
			t.Errorf("#%d: ParseLine(%q): got %q, want %q", i, tt.line, got, tt.want)
		}
	}
}

func TestProtocolErrorQuotesLine(t *testing.T) {
	_, err := ParseLine([]byte("%window-add @\x1b"))
	if got, want := err.Error(), `controlmode: bad id: "%window-add @\x1b"`; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

func TestUnvis(t *testing.T) {
	tests := []struct{ in, want string }{
		{"plain", "plain"},
		{`a\tb`, "a\tb"},
		{`a\\b`, `a\b`},
		{`\n\r\b\a\v\f\s\E`, "\n\r\b\a\v\f \x1b"},
		{`\303\251`, "é"},
		{`\0`, "\x00"},
		{`\01x`, "\x01x"},
		{`\$`, "$"},
		{`trailing\`, `trailing\`},
	}
	for i, tt := range tests {
		if got := unvis([]byte(tt.in)); got != tt.want {
			t.Errorf("#%d: unvis(%q): got %q, want %q", i, tt.in, got, tt.want)
		}
	}
}

var _ = time.Second
