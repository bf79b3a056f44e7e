package notify

import (
	"context"
	"strings"
	"time"
	"unicode"

	"github.com/nudgehq/nudge/controlmode"
)

// displayTimeout bounds one round of list-clients and display-message.
const displayTimeout = 5 * time.Second

// maxMessage bounds a tmux message (the status line is one row).
const maxMessage = 200

// display shows msg on every ordinary (not control-mode) client attached to the
// workspace's session, over the workspace's control connection.
func (n *Notifier) display(ws, msg string) {
	conn, err := n.conns.Conn(ws)
	if err != nil {
		return // no connection (host unreachable, workspace gone): nothing attached to tell
	}
	ctx, cancel := context.WithTimeout(n.ctx, displayTimeout)
	defer cancel()
	if err := Display(ctx, conn, n.cfg.Session(ws), msg); err != nil {
		n.log.Debug("notify display", "workspace", ws, "err", err)
	}
}

// Display shows msg with display-message on each client attached to session that is not
// a control-mode client (none on tmux 3.2, whose display-message cannot name a client). msg is shown literally: control characters become spaces, '#'
// is doubled (display-message expands formats, and #() would run a shell command), and it
// is cut at 200 characters.
func Display(ctx context.Context, conn *controlmode.Conn, session, msg string) error {
	if !conn.Caps().DisplayToClient() {
		return nil // tmux 3.2: display-message cannot name a client (Caps.Degraded says so)
	}
	target, err := controlmode.Quote("=" + session)
	if err != nil {
		return err
	}
	format, _ := controlmode.Quote("#{client_control_mode} #{client_name}")
	reply, err := conn.Do(ctx, "list-clients -t "+target+" -F "+format)
	if err != nil {
		return err
	}
	text, err := controlmode.Quote(Literal(msg))
	if err != nil {
		return err
	}
	var cmds []string
	for _, line := range reply.Lines {
		control, name, ok := strings.Cut(line, " ")
		if !ok || control != "0" || name == "" {
			continue
		}
		qn, err := controlmode.Quote(name)
		if err != nil {
			continue
		}
		cmds = append(cmds, "display-message -c "+qn+" "+text)
	}
	if len(cmds) == 0 {
		return nil
	}
	_, err = conn.DoAll(ctx, cmds...)
	return err
}

// Literal makes msg safe as a display-message format that shows as itself.
func Literal(msg string) string {
	msg = strings.Map(func(r rune) rune {
		if unicode.IsControl(r) || r == unicode.ReplacementChar {
			return ' '
		}
		return r
	}, msg)
	if r := []rune(msg); len(r) > maxMessage {
		msg = string(r[:maxMessage-1]) + "…"
	}
	return strings.ReplaceAll(msg, "#", "##")
}
