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
	if !conn.Caps().DisplayToClient() {
		return // tmux 3.2 (see show): not even the clients are asked
	}
	ctx, cancel := context.WithTimeout(n.ctx, displayTimeout)
	defer cancel()
	names, err := n.clients.get(ctx, conn, n.cfg.Session(ws))
	if err == nil && len(names) > 0 {
		err = show(ctx, conn, names, msg)
	}
	if err != nil {
		n.log.Debug("notify display", "workspace", ws, "err", err)
	}
}

// nobodyToShow reports that a message for ws would reach no one, as display would find
// it: no connection, a tmux that cannot show it, or no ordinary client attached in the
// list of the last clientsFresh. A busy fleet's READY changes (tens a second, with nobody
// attached) then start no goroutine each.
func (n *Notifier) nobodyToShow(ws string) bool {
	conn, err := n.conns.Conn(ws)
	if err != nil || !conn.Caps().DisplayToClient() {
		return true
	}
	names, ok := n.clients.fresh(conn, n.cfg.Session(ws))
	return ok && len(names) == 0
}

// Display shows msg with display-message on each client attached to session that is not
// a control-mode client (none on tmux 3.2, see show). msg is shown literally: control
// characters become spaces, '#' is doubled (display-message expands formats, and #() would
// run a shell command), and it is cut at 200 characters.
func Display(ctx context.Context, conn *controlmode.Conn, session, msg string) error {
	names, err := listClients(ctx, conn, session)
	if err != nil {
		return err
	}
	return show(ctx, conn, names, msg)
}

// listClients returns the names of the ordinary clients attached to session.
func listClients(ctx context.Context, conn *controlmode.Conn, session string) ([]string, error) {
	target, err := controlmode.Quote("=" + session)
	if err != nil {
		return nil, err
	}
	format, _ := controlmode.Quote("#{client_control_mode} #{client_name}")
	reply, err := conn.Do(ctx, "list-clients -t "+target+" -F "+format)
	if err != nil {
		return nil, err
	}
	var names []string
	for _, line := range reply.Lines {
		control, name, ok := strings.Cut(line, " ")
		if ok && control == "0" && name != "" {
			names = append(names, name)
		}
	}
	return names, nil
}

// show displays msg on the clients named; on tmux 3.2, whose display-message cannot name a
// client, on none (controlmode.Caps.Degraded says so).
func show(ctx context.Context, conn *controlmode.Conn, names []string, msg string) error {
	if !conn.Caps().DisplayToClient() {
		return nil
	}
	text, err := controlmode.Quote(Literal(msg))
	if err != nil {
		return err
	}
	var cmds []string
	for _, name := range names {
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
