package cli

import (
	"context"
	"net"
	"net/http"
	"strings"

	"github.com/nudgehq/nudge/cmd/nudge/api"
)

// client is the tests' handle on a daemon: api.Client under the short names the tests
// were written with.
type client struct{ *api.Client }

func newClient(socket, token string) *client { return &client{api.NewClient(socket, token)} }

func (c *client) do(ctx context.Context, method, path string, body, out any) error {
	return c.Do(ctx, method, path, body, out)
}

func (c *client) send(ctx context.Context, method, path string, body any) (*http.Response, error) {
	return c.Send(ctx, method, path, body)
}

// postRaw sends body as it is, not even checked to be JSON; the caller closes the answer.
func (c *client) postRaw(path, body string) (*http.Response, error) {
	tr := &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "unix", c.Socket())
	}}
	defer tr.CloseIdleConnections()
	req, err := http.NewRequest("POST", "http://nudge"+path, strings.NewReader(body))
	if err != nil {
		return nil, err
	}
	return (&http.Client{Transport: tr}).Do(req)
}
