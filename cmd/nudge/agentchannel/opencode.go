package agentchannel

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"regexp"
	"strconv"
	"time"

	"github.com/nudgehq/nudge"
	"github.com/nudgehq/nudge/inject"
	"github.com/nudgehq/nudge/panes"
)

// BackendOpenCode is the receipt's delivery_backend of a prompt handed to OpenCode's own
// HTTP server.
const BackendOpenCode = "opencode_http"

// openCodeTimeout bounds one prompt handed to OpenCode's server.
const openCodeTimeout = 5 * time.Second

// openCodeSession is what an OpenCode session id looks like.
var openCodeSession = regexp.MustCompile(`^ses_[A-Za-z0-9]{8,64}$`)

// opencode hands text to the OpenCode session of rt through the HTTP server nudge had it
// open at launch (panes.OpenCodeChannel: a loopback port and a password of nudge's):
// `POST /session/{id}/prompt_async`, which OpenCode queues behind a turn in progress and
// shows in its TUI as it shows a typed prompt. Before the password goes anywhere, every
// listener on that port must be a socket of a process of the runtime's own (its pane's
// process tree, this uid): a port another program took first (another user's, or another
// agent's) gets nothing, and the prompt is typed. The session must be known (read from
// OpenCode's record after the first prompt, which is typed).
func (c *Channels) opencode(ctx context.Context, rt nudge.Runtime, text string) (string, error) {
	switch {
	case c.Dir == "":
		return "", fmt.Errorf("%w: no channel directory", inject.ErrNoChannel)
	case !openCodeSession.MatchString(rt.SessionID):
		return "", fmt.Errorf("%w: no OpenCode session known yet", inject.ErrNoChannel)
	case rt.PID <= 0:
		return "", fmt.Errorf("%w: the runtime's process is not known", inject.ErrNoChannel)
	}
	srv, err := panes.OpenCodeChannel(c.Dir, rt.RuntimeID)
	if err != nil {
		return "", fmt.Errorf("%w: %v", inject.ErrNoChannel, err)
	}
	if err := listenerHeldBy(srv.Port, rt.PID); err != nil {
		return "", fmt.Errorf("%w: port %d: %v", inject.ErrNoChannel, srv.Port, err)
	}
	body, err := json.Marshal(map[string]any{"parts": []any{map[string]any{"type": "text", "text": text}}})
	if err != nil {
		return "", fmt.Errorf("%w: %v", inject.ErrNoChannel, err)
	}
	ctx, cancel := context.WithTimeout(ctx, openCodeTimeout)
	defer cancel()
	url := "http://127.0.0.1:" + strconv.Itoa(srv.Port) + "/session/" + rt.SessionID + "/prompt_async"
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return "", fmt.Errorf("%w: %v", inject.ErrNoChannel, err)
	}
	req.SetBasicAuth("opencode", srv.Password)
	req.Header.Set("Content-Type", "application/json")
	// One connection, to the address checked, never through a proxy of the environment.
	tr := &http.Transport{Proxy: nil, DisableKeepAlives: true,
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "tcp", "127.0.0.1:"+strconv.Itoa(srv.Port))
		}}
	defer tr.CloseIdleConnections()
	resp, err := (&http.Client{Transport: tr}).Do(req)
	if err != nil {
		var op *net.OpError
		if errors.As(err, &op) && op.Op == "dial" {
			return "", fmt.Errorf("%w: %v", inject.ErrNoChannel, err) // nothing went
		}
		return BackendOpenCode, err // it may have gone: the record decides
	}
	defer resp.Body.Close()
	msg, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
	if resp.StatusCode/100 != 2 {
		// Refused before it was admitted (a wrong password, an unknown session): nothing went.
		return "", fmt.Errorf("%w: OpenCode answered %s: %s", inject.ErrNoChannel, resp.Status, bytes.TrimSpace(msg))
	}
	return BackendOpenCode, nil
}
