package controlmode

import (
	"bytes"
	"time"
)

// ParseLine parses one line written by tmux outside a reply body: a notification, a
// %begin/%end/%error guard (*Guard) or pane output (*Output, unescaped into a new slice).
// A trailing "\n" or "\r\n" is ignored. A line that is not a known notification yields
// *Unknown and no error; a known notification with malformed fields yields a
// *ProtocolError. Names are unvis-ed. ParseLine never panics and keeps no reference to
// line.
func ParseLine(line []byte) (Event, error) {
	line = trimEOL(line)
	if len(line) == 0 || line[0] != '%' {
		return &Unknown{Line: string(line)}, nil
	}
	name, rest, _ := bytes.Cut(line, []byte{' '})
	p, ok := parsers[string(name)]
	if !ok {
		return &Unknown{Line: string(line)}, nil
	}
	ev, reason := p(rest)
	if reason != "" {
		return nil, &ProtocolError{Line: string(line), Reason: reason}
	}
	return ev, nil
}

type parseFunc func(rest []byte) (Event, string)

var parsers map[string]parseFunc

func init() {
	parsers = map[string]parseFunc{
		"%output":                  parseOutput,
		"%extended-output":         parseExtendedOutput,
		"%begin":                   guardParser("begin"),
		"%end":                     guardParser("end"),
		"%error":                   guardParser("error"),
		"%session-changed":         idName('$', func(id int, n string) Event { return &SessionChanged{id, n} }),
		"%session-renamed":         idName('$', func(id int, n string) Event { return &SessionRenamed{id, n} }),
		"%window-renamed":          idName('@', func(id int, n string) Event { return &WindowRenamed{id, n} }),
		"%unlinked-window-renamed": idName('@', func(id int, n string) Event { return &UnlinkedWindowRenamed{id, n} }),
		"%window-add":              oneID('@', func(id int) Event { return &WindowAdd{id} }),
		"%window-close":            oneID('@', func(id int) Event { return &WindowClose{id} }),
		"%unlinked-window-add":     oneID('@', func(id int) Event { return &UnlinkedWindowAdd{id} }),
		"%unlinked-window-close":   oneID('@', func(id int) Event { return &UnlinkedWindowClose{id} }),
		"%pane-mode-changed":       oneID('%', func(id int) Event { return &PaneModeChanged{id} }),
		"%pause":                   oneID('%', func(id int) Event { return &Pause{id} }),
		"%continue":                oneID('%', func(id int) Event { return &Continue{id} }),
		"%session-window-changed": twoIDs('$', '@', func(a, b int) Event {
			return &SessionWindowChanged{a, b}
		}),
		"%window-pane-changed":    twoIDs('@', '%', func(a, b int) Event { return &WindowPaneChanged{a, b} }),
		"%sessions-changed":       func([]byte) (Event, string) { return &SessionsChanged{}, "" },
		"%client-session-changed": parseClientSessionChanged,
		"%client-detached":        text(func(s string) Event { return &ClientDetached{s} }),
		"%exit":                   text(func(s string) Event { return &Exit{s} }),
		"%message":                text(func(s string) Event { return &Message{s} }),
		"%config-error":           text(func(s string) Event { return &ConfigError{s} }),
		"%paste-buffer-changed":   text(func(s string) Event { return &PasteBufferChanged{s} }),
		"%paste-buffer-deleted":   text(func(s string) Event { return &PasteBufferDeleted{s} }),
		"%layout-change":          parseLayoutChange,
		"%subscription-changed":   parseSubscriptionChanged,
	}
}

func oneID(sigil byte, mk func(int) Event) parseFunc {
	return func(rest []byte) (Event, string) {
		id, ok := parseID(rest, sigil)
		if !ok {
			return nil, "bad id"
		}
		return mk(id), ""
	}
}

func twoIDs(s1, s2 byte, mk func(a, b int) Event) parseFunc {
	return func(rest []byte) (Event, string) {
		f1, f2, _ := bytes.Cut(rest, []byte{' '})
		a, ok1 := parseID(f1, s1)
		b, ok2 := parseID(f2, s2)
		if !ok1 || !ok2 {
			return nil, "bad id"
		}
		return mk(a, b), ""
	}
}

func idName(sigil byte, mk func(int, string) Event) parseFunc {
	return func(rest []byte) (Event, string) {
		f, name, found := bytes.Cut(rest, []byte{' '})
		id, ok := parseID(f, sigil)
		if !ok || !found {
			return nil, "bad id or missing name"
		}
		return mk(id, unvis(name)), ""
	}
}

func text(mk func(string) Event) parseFunc {
	return func(rest []byte) (Event, string) { return mk(string(rest)), "" }
}

func parseClientSessionChanged(rest []byte) (Event, string) {
	client, rest, _ := bytes.Cut(rest, []byte{' '})
	f, name, found := bytes.Cut(rest, []byte{' '})
	id, ok := parseID(f, '$')
	if len(client) == 0 || !ok || !found {
		return nil, "bad client-session-changed"
	}
	return &ClientSessionChanged{Client: string(client), ID: id, Name: unvis(name)}, ""
}

func parseLayoutChange(rest []byte) (Event, string) {
	f, rest, _ := bytes.Cut(rest, []byte{' '})
	id, ok := parseID(f, '@')
	if !ok || len(rest) == 0 {
		return nil, "bad layout-change"
	}
	layout, rest, _ := bytes.Cut(rest, []byte{' '})
	visible, flags, _ := bytes.Cut(rest, []byte{' '})
	return &LayoutChange{Window: id, Layout: string(layout), VisibleLayout: string(visible),
		Flags: string(flags)}, ""
}

// parseSubscriptionChanged parses "name $s @w|- idx|- %p|- [future…] : value", splitting
// at the first " : " after the fixed fields (the value may itself contain " : ").
func parseSubscriptionChanged(rest []byte) (Event, string) {
	var f [5][]byte
	for i := range f {
		f[i], rest, _ = bytes.Cut(rest, []byte{' '})
	}
	var value []byte
	switch {
	case bytes.HasPrefix(rest, []byte(": ")):
		value = rest[2:]
	case bytes.Equal(rest, []byte(":")):
	default:
		i := bytes.Index(rest, []byte(" : "))
		if i < 0 {
			return nil, "missing ' : ' in subscription-changed"
		}
		value = rest[i+3:]
	}
	ev := &SubscriptionChanged{Name: string(f[0]), Value: string(value)}
	var ok [4]bool
	ev.Session, ok[0] = parseID(f[1], '$')
	ev.Window, ok[1] = parseID(f[2], '@')
	ev.WindowIndex, ok[2] = parseID(f[3], 0)
	ev.Pane, ok[3] = parseID(f[4], '%')
	if len(f[0]) == 0 || !ok[0] || !ok[1] || !ok[2] || !ok[3] {
		return nil, "bad subscription-changed ids"
	}
	return ev, ""
}

// parseOutput parses "%p escaped-data".
func parseOutput(rest []byte) (Event, string) {
	pane, data, ok := outputHeader(rest)
	if !ok {
		return nil, "bad output"
	}
	return &Output{Pane: pane, Data: Unescape(nil, data)}, ""
}

func parseExtendedOutput(rest []byte) (Event, string) {
	pane, age, data, ok := extendedOutputHeader(rest)
	if !ok {
		return nil, "bad extended-output"
	}
	return &Output{Pane: pane, Age: age, Data: Unescape(nil, data)}, ""
}

// outputHeader splits the rest of an %output line into pane and escaped data.
func outputHeader(rest []byte) (pane int, data []byte, ok bool) {
	f, data, found := bytes.Cut(rest, []byte{' '})
	pane, ok = parseID(f, '%')
	return pane, data, ok && found && pane >= 0
}

// extendedOutputHeader splits "%p age [future…] : data".
func extendedOutputHeader(rest []byte) (pane int, age time.Duration, data []byte, ok bool) {
	f, rest, _ := bytes.Cut(rest, []byte{' '})
	pane, ok = parseID(f, '%')
	f, rest, _ = bytes.Cut(rest, []byte{' '})
	ms, ok2 := parseUint(f)
	if !ok || !ok2 || pane < 0 {
		return 0, 0, nil, false
	}
	if bytes.HasPrefix(rest, []byte(": ")) {
		return pane, time.Duration(ms) * time.Millisecond, rest[2:], true
	}
	i := bytes.Index(rest, []byte(" : "))
	if i < 0 {
		return 0, 0, nil, false
	}
	return pane, time.Duration(ms) * time.Millisecond, rest[i+3:], true
}

func guardParser(kind string) parseFunc {
	return func(rest []byte) (Event, string) {
		g, ok := parseGuard(rest)
		if !ok {
			return nil, "bad guard"
		}
		g.Kind = kind
		return &g, ""
	}
}

// parseGuard parses "time number flags".
func parseGuard(rest []byte) (Guard, bool) {
	f1, rest, _ := bytes.Cut(rest, []byte{' '})
	f2, f3, _ := bytes.Cut(rest, []byte{' '})
	t, ok1 := parseUint(f1)
	n, ok2 := parseUint(f2)
	fl, ok3 := parseUint(f3)
	if !ok1 || !ok2 || !ok3 || t > 1<<62 || fl > 1<<30 {
		return Guard{}, false
	}
	return Guard{Time: int64(t), Number: n, Flags: int(fl)}, true
}

// parseID parses sigil+digits ($3, @4, %5) or "-" (-1). A zero sigil means bare digits.
func parseID(b []byte, sigil byte) (int, bool) {
	if len(b) == 1 && b[0] == '-' {
		return -1, true
	}
	if sigil != 0 {
		if len(b) < 2 || b[0] != sigil {
			return 0, false
		}
		b = b[1:]
	}
	n, ok := parseUint(b)
	if !ok || n > 1<<31-1 {
		return 0, false
	}
	return int(n), true
}

func parseUint(b []byte) (uint64, bool) {
	if len(b) == 0 || len(b) > 19 {
		return 0, false
	}
	var n uint64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + uint64(c-'0')
	}
	return n, true
}

func trimEOL(b []byte) []byte {
	if n := len(b); n > 0 && b[n-1] == '\n' {
		b = b[:n-1]
	}
	if n := len(b); n > 0 && b[n-1] == '\r' {
		b = b[:n-1]
	}
	return b
}
