package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"syscall"
	"time"

	"github.com/nudgehq/nudge"
)

// client talks to the daemon over its unix socket.
type client struct {
	socket string
	token  string
	http   *http.Client
}

// clientOpts are the flags every client command shares.
type clientOpts struct {
	socket, stateDir, token string
}

func addClientFlags(fs *flag.FlagSet) *clientOpts {
	o := &clientOpts{}
	fs.StringVar(&o.stateDir, "state-dir", defaultStateDir(), "daemon state directory (used to find the default socket)")
	fs.StringVar(&o.socket, "socket", "", "daemon socket (default $XDG_RUNTIME_DIR/nudge/nudge.sock, else under the state dir)")
	fs.StringVar(&o.token, "token", "", "API token (default $NUDGE_TOKEN, else $NUDGE_RUNTIME_TOKEN inside a managed pane)")
	return o
}

func (o *clientOpts) client(env *cliEnv) *client {
	sock := o.socket
	if sock == "" {
		sock = env.getenv("NUDGE_SOCKET")
	}
	if sock == "" {
		sock = defaultSocket(o.stateDir)
	}
	tok := o.token
	if tok == "" {
		tok = runtimeToken(env)
	}
	return newClient(sock, tok)
}

func newClient(socket, token string) *client {
	tr := &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", socket)
		},
		MaxIdleConns: 4,
	}
	return &client{socket: socket, token: token, http: &http.Client{Transport: tr}}
}

// do sends a request and decodes a 2xx JSON answer into out (if non-nil). A non-2xx answer
// is returned as *apiError.
func (c *client) do(ctx context.Context, method, path string, body, out any) error {
	resp, err := c.send(ctx, method, path, body)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return fmt.Errorf("read reply: %w", err)
	}
	if resp.StatusCode/100 != 2 {
		var ae apiError
		if json.Unmarshal(data, &ae) == nil && ae.ErrorCode != "" {
			return &ae
		}
		return fmt.Errorf("daemon answered %s: %s", resp.Status, bytes.TrimSpace(data))
	}
	if out == nil {
		return nil
	}
	if raw, ok := out.(*json.RawMessage); ok {
		*raw = append((*raw)[:0], data...)
		return nil
	}
	return json.Unmarshal(data, out)
}

func (c *client) send(ctx context.Context, method, path string, body any) (*http.Response, error) {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return nil, err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, "http://nudge"+path, rd)
	if err != nil {
		return nil, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, c.explain(err)
	}
	return resp, nil
}

// explain turns a dial failure into a message that says what to do.
func (c *client) explain(err error) error {
	if errors.Is(err, syscall.ENOENT) || errors.Is(err, syscall.ECONNREFUSED) {
		return &apiError{nudge.Unavailable, fmt.Sprintf("no daemon on %s (start one with `nudge serve`)", c.socket)}
	}
	if errors.Is(err, os.ErrPermission) {
		return &apiError{nudge.Forbidden, fmt.Sprintf("cannot connect to %s: permission denied", c.socket)}
	}
	return err
}

// printJSON writes raw JSON indented to w.
func printJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

func shortCtx(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, 30*time.Second)
}
