package main

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
)

// rawClient is one keep-alive HTTP/1.1 connection to the API written by hand: the
// request's bytes go out in one write(2) right after the caller's clock stamp, with no
// client-side goroutine hop (net/http's Transport writes through a goroutine of its
// own), so "request" in the figures is when the request hit the socket.
type rawClient struct {
	c  net.Conn
	br *bufio.Reader
}

func dialRaw(sock string) (*rawClient, error) {
	c, err := net.Dial("unix", sock)
	if err != nil {
		return nil, err
	}
	return &rawClient{c: c, br: bufio.NewReader(c)}, nil
}

// request builds a POST's bytes.
func request(path string, body []byte) []byte {
	return fmt.Appendf(nil, "POST %s HTTP/1.1\r\nHost: nudge\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s",
		path, len(body), body)
}

// send writes a request built by request and reads the whole response.
func (c *rawClient) send(req []byte) (int, []byte, error) {
	if _, err := c.c.Write(req); err != nil {
		return 0, nil, err
	}
	resp, err := http.ReadResponse(c.br, nil)
	if err != nil {
		return 0, nil, err
	}
	b, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	return resp.StatusCode, b, err
}

func (c *rawClient) close() { c.c.Close() }

// promHistogram is a Prometheus histogram read from /metrics: cumulative counts by their
// upper bound (le, seconds; +Inf included).
type promHistogram map[float64]float64

// readHistogram reads name's buckets from the daemon's /metrics.
func (e *env) readHistogram(name string) (promHistogram, error) {
	b, err := e.get("/metrics")
	if err != nil {
		return nil, err
	}
	return parseHistogram(string(b), name)
}

// parseHistogram reads name's buckets from a Prometheus text exposition.
func parseHistogram(text, name string) (promHistogram, error) {
	h := promHistogram{}
	prefix := name + `_bucket{le="`
	for _, l := range strings.Split(text, "\n") {
		rest, ok := strings.CutPrefix(l, prefix)
		if !ok {
			continue
		}
		le, val, ok := strings.Cut(rest, `"} `)
		if !ok {
			continue
		}
		bound, err1 := strconv.ParseFloat(le, 64) // accepts "+Inf"
		v, err2 := strconv.ParseFloat(val, 64)
		if err1 == nil && err2 == nil {
			h[bound] = v
		}
	}
	if len(h) == 0 {
		return nil, fmt.Errorf("/metrics has no histogram %s", name)
	}
	return h, nil
}

// since returns the counts h gained over before.
func (h promHistogram) since(before promHistogram) promHistogram {
	d := promHistogram{}
	for k, v := range h {
		d[k] = v - before[k]
	}
	return d
}

// quantiles returns the count and, for each p, the upper bound (µs) of the bucket that
// holds the p-th quantile: "at most", to the bucket's width (+Inf past the last bound).
func (h promHistogram) quantiles(ps ...float64) (float64, []float64) {
	bounds := make([]float64, 0, len(h))
	for le := range h {
		bounds = append(bounds, le)
	}
	slices.Sort(bounds)
	total := 0.0
	if len(bounds) > 0 {
		total = h[bounds[len(bounds)-1]] // +Inf: every sample
	}
	out := make([]float64, len(ps))
	for i, p := range ps {
		for _, le := range bounds {
			if h[le] >= p*total {
				out[i] = le * 1e6
				break
			}
		}
	}
	return total, out
}
