package main

import (
	"bufio"
	"fmt"
	"io"
	"math"
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

// vmHistogram is a VictoriaMetrics histogram read from /metrics: bucket counts by
// their vmrange ("1.000e-04...1.136e-04").
type vmHistogram map[string]float64

// readHistogram reads name's buckets from the daemon's /metrics.
func (e *env) readHistogram(name string) (vmHistogram, error) {
	b, err := e.get("/metrics")
	if err != nil {
		return nil, err
	}
	h := vmHistogram{}
	prefix := name + `_bucket{vmrange="`
	for _, l := range strings.Split(string(b), "\n") {
		rest, ok := strings.CutPrefix(l, prefix)
		if !ok {
			continue
		}
		rng, val, ok := strings.Cut(rest, `"} `)
		if !ok {
			continue
		}
		v, err := strconv.ParseFloat(val, 64)
		if err == nil {
			h[rng] = v
		}
	}
	return h, nil
}

// since returns the counts h gained over before.
func (h vmHistogram) since(before vmHistogram) vmHistogram {
	d := vmHistogram{}
	for k, v := range h {
		if n := v - before[k]; n > 0 {
			d[k] = n
		}
	}
	return d
}

// quantiles returns the count and, for each p, the upper bound (µs) of the bucket that
// holds the p-th quantile: "at most", to the bucket's width (about 14%).
func (h vmHistogram) quantiles(ps ...float64) (float64, []float64) {
	type bucket struct{ hi, n float64 }
	var bs []bucket
	total := 0.0
	for rng, n := range h {
		_, hi, ok := strings.Cut(rng, "...")
		v, err := strconv.ParseFloat(hi, 64)
		if !ok || err != nil {
			continue
		}
		bs = append(bs, bucket{v, n})
		total += n
	}
	slices.SortFunc(bs, func(a, b bucket) int { return int(math.Copysign(1, a.hi-b.hi)) })
	out := make([]float64, len(ps))
	for i, p := range ps {
		acc := 0.0
		for _, b := range bs {
			acc += b.n
			if acc >= p*total {
				out[i] = b.hi * 1e6
				break
			}
		}
	}
	return total, out
}
