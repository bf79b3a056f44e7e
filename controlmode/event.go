package controlmode

import "time"

// Event is one notification from tmux, delivered to Config.OnEvent on the read goroutine.
// The concrete types are the pointer types below. Session, window and pane ids are the
// numbers of $N, @N and %N; -1 stands for "-".
type Event interface {
	event()
}

// SessionChanged (%session-changed $s name): this client is now attached to session ID.
type SessionChanged struct {
	ID   int
	Name string
}

// ClientSessionChanged (%client-session-changed client $s name): another client moved.
type ClientSessionChanged struct {
	Client string
	ID     int
	Name   string
}

// SessionRenamed (%session-renamed $s name).
type SessionRenamed struct {
	ID   int
	Name string
}

// SessionWindowChanged (%session-window-changed $s @w): the session's current window.
type SessionWindowChanged struct {
	Session int
	Window  int
}

// SessionsChanged (%sessions-changed): a session was created or destroyed.
type SessionsChanged struct{}

// WindowAdd (%window-add @w): a window was linked into the attached session.
type WindowAdd struct{ Window int }

// WindowClose (%window-close @w).
type WindowClose struct{ Window int }

// WindowRenamed (%window-renamed @w name).
type WindowRenamed struct {
	Window int
	Name   string
}

// UnlinkedWindowAdd (%unlinked-window-add @w): a window outside the attached session.
type UnlinkedWindowAdd struct{ Window int }

// UnlinkedWindowClose (%unlinked-window-close @w).
type UnlinkedWindowClose struct{ Window int }

// UnlinkedWindowRenamed (%unlinked-window-renamed @w name).
type UnlinkedWindowRenamed struct {
	Window int
	Name   string
}

// WindowPaneChanged (%window-pane-changed @w %p): the window's active pane.
type WindowPaneChanged struct {
	Window int
	Pane   int
}

// LayoutChange (%layout-change @w layout visible-layout flags). VisibleLayout and Flags
// are empty in the old one-field form.
type LayoutChange struct {
	Window        int
	Layout        string
	VisibleLayout string
	Flags         string
}

// PaneModeChanged (%pane-mode-changed %p): the pane entered or left a mode (copy mode…).
type PaneModeChanged struct{ Pane int }

// ClientDetached (%client-detached client).
type ClientDetached struct{ Client string }

// SubscriptionChanged (%subscription-changed name $s @w idx %p … : value). Window,
// WindowIndex and Pane are -1 for a session subscription.
type SubscriptionChanged struct {
	Name        string
	Session     int
	Window      int
	WindowIndex int
	Pane        int
	Value       string
}

// Pause (%pause %p): tmux dropped the pane's queued output because this client fell
// behind. The Conn has already sent `refresh-client -A '%p:continue'`; the consumer
// resyncs the pane (capture-pane), since output during the pause is lost.
type Pause struct{ Pane int }

// Continue (%continue %p): output for the pane resumes.
type Continue struct{ Pane int }

// Exit (%exit [reason]): the control client is ending; Done follows.
type Exit struct{ Reason string }

// Message (%message text, tmux 3.4+).
type Message struct{ Text string }

// ConfigError (%config-error text, tmux 3.4+).
type ConfigError struct{ Text string }

// PasteBufferChanged (%paste-buffer-changed name, tmux 3.4+).
type PasteBufferChanged struct{ Name string }

// PasteBufferDeleted (%paste-buffer-deleted name, tmux 3.4+).
type PasteBufferDeleted struct{ Name string }

// Unsolicited is a %begin…%end (or %error) block with flags 0: the initial attach
// command, a hook, a binding run by send-keys in a mode. It answers none of our commands.
type Unsolicited struct {
	Reply *Reply
	Error bool // the block ended with %error
}

// Unknown is a line the parser does not know (a newer tmux's notification, a line outside
// any block that is not a notification, or a malformed known one). It is not an error.
type Unknown struct{ Line string }

// Output is a decoded %output or %extended-output line as returned by ParseLine. A Conn
// never allocates one: it passes pane output to Config.OnOutput instead.
type Output struct {
	Pane int
	Age  time.Duration
	Data []byte
}

// Guard is a %begin, %end or %error line as returned by ParseLine. A Conn consumes guards
// itself and never delivers them as events.
type Guard struct {
	Kind   string // "begin", "end" or "error"
	Time   int64
	Number uint64
	Flags  int
}

func (*SessionChanged) event()        {}
func (*ClientSessionChanged) event()  {}
func (*SessionRenamed) event()        {}
func (*SessionWindowChanged) event()  {}
func (*SessionsChanged) event()       {}
func (*WindowAdd) event()             {}
func (*WindowClose) event()           {}
func (*WindowRenamed) event()         {}
func (*UnlinkedWindowAdd) event()     {}
func (*UnlinkedWindowClose) event()   {}
func (*UnlinkedWindowRenamed) event() {}
func (*WindowPaneChanged) event()     {}
func (*LayoutChange) event()          {}
func (*PaneModeChanged) event()       {}
func (*ClientDetached) event()        {}
func (*SubscriptionChanged) event()   {}
func (*Pause) event()                 {}
func (*Continue) event()              {}
func (*Exit) event()                  {}
func (*Message) event()               {}
func (*ConfigError) event()           {}
func (*PasteBufferChanged) event()    {}
func (*PasteBufferDeleted) event()    {}
func (*Unsolicited) event()           {}
func (*Unknown) event()               {}
func (*Output) event()                {}
func (*Guard) event()                 {}
