package main

import (
	"context"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/nudgehq/nudge"
	"github.com/nudgehq/nudge/controlmode"
	"github.com/nudgehq/nudge/panes"
)

// paneReader reads runtimes' panes over their workspace's control connection
// (server.Panes).
type paneReader struct{ reg *panes.Registry }

// Capture reads the last n lines of a runtime's pane over its workspace's control
// connection (joined wrapped lines, trailing blank lines dropped), cleaned for display.
func (p paneReader) Capture(ctx context.Context, rt nudge.Runtime, n int) ([]string, error) {
	target := rt.PaneID
	if target == "" {
		target = rt.Target
	}
	if target == "" {
		return nil, nudge.NewError(nudge.TargetNotFound, "runtime "+rt.RuntimeID+" has no pane")
	}
	c, err := p.reg.Conn(rt.WorkspaceID)
	if err != nil {
		return nil, err
	}
	q, err := controlmode.Quote(target)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	rep, err := c.Do(ctx, "capture-pane -p -J -S -"+strconv.Itoa(n)+" -t "+q)
	if err != nil {
		return nil, err
	}
	lines := make([]string, 0, len(rep.Lines))
	for _, l := range rep.Lines {
		lines = append(lines, strings.TrimRight(cleanCapture(l), " "))
	}
	for len(lines) > 0 && lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	// A secret split across lines (a PEM block) is masked as a whole too.
	joined := nudge.Redact(strings.Join(lines, "\n"))
	return strings.Split(joined, "\n"), nil
}

func runTail(ctx context.Context, env *cliEnv, args []string) error {
	fs := newFlagSet("tail", "RUNTIME_ID", env)
	o := addClientFlags(fs)
	n := fs.Int("lines", 40, "output lines to show")
	history := fs.Int("history", 20, "state-history (audit) records to show")
	asJSON := fs.Bool("json", false, "print JSON")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return usagef("want one RUNTIME_ID")
	}
	if *n <= 0 {
		return usagef("--lines must be positive")
	}
	ctx, cancel := shortCtx(ctx)
	defer cancel()
	c := o.client(env)
	id := fs.Arg(0)
	var tv tailView
	if err := c.do(ctx, "GET", "/v1/runtimes/"+url.PathEscape(id)+"/tail?lines="+strconv.Itoa(*n), nil, &tv); err != nil {
		return err
	}
	var recs []nudge.AuditRecord
	if *history > 0 {
		q := url.Values{"runtime": {id}, "limit": {strconv.Itoa(*history)}, "newest": {"1"}}
		if err := c.do(ctx, "GET", "/v1/audit?"+q.Encode(), nil, &recs); err != nil {
			return err
		}
	}
	if *asJSON {
		return printJSON(env.stdout, map[string]any{"tail": tv, "history": recs})
	}
	fmt.Fprintf(env.stdout, "── %s (%s) output, last %d lines ──\n", tv.RuntimeID, orDash(tv.PaneID), *n)
	for _, l := range tv.Lines {
		fmt.Fprintln(env.stdout, l)
	}
	if *history > 0 {
		fmt.Fprintf(env.stdout, "── %s history (newest last) ──\n", tv.RuntimeID)
		for _, r := range recs {
			printAudit(env.stdout, r)
		}
	}
	return nil
}
