package main

import (
	"context"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/nudgehq/nudge/cmd/nudge/api"
	"github.com/nudgehq/nudge/panes"
)

// stopProgress is how often stop says it is still waiting for a program to end.
const stopProgress = 2 * time.Second

func stopCmd(env *cliEnv) *cobra.Command {
	var reason, ws string
	cmd := &cobra.Command{
		Use:   "stop RUNTIME_ID... | --workspace WS [--reason TEXT]",
		Short: "stop runtimes (C-c, then SIGHUP, SIGTERM, SIGKILL by pid); they stay stopped",
		Long: "Stop runtimes: C-c to each one's program, then SIGHUP, SIGTERM and SIGKILL by pid if it has not\n" +
			"ended (serve --stop-timeout, --kill-grace); several at once, by id or every live runtime of a\n" +
			"workspace. A stopped runtime stays stopped: a trigger to it fails with RUNTIME_STOPPED, nothing\n" +
			"starts it again, until `nudge restart RUNTIME_ID`. What it is doing goes to stderr while it waits.",
		Example: "  nudge stop rt_mobile_core.reviewer --reason \"done for today\"\n" +
			"  nudge stop rt_app.a rt_app.b\n  nudge stop --workspace mobile_core",

		ValidArgsFunction: completeRuntimes(env),
	}
	o := addClientFlags(cmd)
	out := addActOutputFlags(cmd, env)
	cmd.Flags().StringVar(&reason, "reason", "", "why (kept in the audit log)")
	cmd.Flags().StringVar(&ws, "workspace", "", "stop every live runtime of this workspace")
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		asJSON, err := out.asJSON()
		if err != nil {
			return err
		}
		if (len(args) == 0) == (ws == "") {
			return usagef("want RUNTIME_IDs or --workspace WS (not both)")
		}
		c := o.client(env)
		defer c.Close()
		if ws != "" {
			rts, err := c.Runtimes(cmd.Context(), ws)
			if err != nil {
				return err
			}
			for _, rt := range rts {
				if panes.Live(rt.Status) {
					args = append(args, rt.RuntimeID)
				}
			}
			if len(args) == 0 {
				fmt.Fprintf(env.stderr, "nothing to stop: workspace %s has no live runtime\n", ws)
				if asJSON {
					return printJSON(env.stdout, []api.Runtime{})
				}
				return nil
			}
		}
		return stopAll(cmd.Context(), env, c, args, reason, asJSON)
	}
	return cmd
}

// stopAll stops ids at once, saying on stderr what it does until each has ended, and
// prints the stopped records (one record alone when one id was given).
func stopAll(ctx context.Context, env *cliEnv, c *api.Client, ids []string, reason string, asJSON bool) error {
	var mu sync.Mutex
	say := func(w io.Writer, format string, args ...any) {
		mu.Lock()
		defer mu.Unlock()
		fmt.Fprintf(w, format, args...)
	}
	rts := make([]api.Runtime, len(ids))
	errs := make([]error, len(ids))
	var wg sync.WaitGroup
	for i, id := range ids {
		wg.Add(1)
		go func() {
			defer wg.Done()
			say(env.stderr, "stopping %s: C-c to its program, then SIGHUP, SIGTERM and SIGKILL by pid if it has not ended (serve --stop-timeout, --kill-grace)...\n", id)
			done := make(chan struct{})
			go func() {
				start := time.Now()
				tick := time.NewTicker(stopProgress)
				defer tick.Stop()
				for {
					select {
					case <-done:
						return
					case <-tick.C:
						say(env.stderr, "  %s: still waiting for its program to end (%s)...\n", id, time.Since(start).Round(time.Second))
					}
				}
			}()
			rts[i], errs[i] = c.Stop(ctx, id, reason)
			close(done)
			if errs[i] != nil {
				if len(ids) > 1 { // one id alone: its error is the command's
					say(env.stderr, "stop %s: %v\n", id, errs[i])
				}
				return
			}
			say(env.stderr, "stopped %s: %s\n", id, rts[i].Status)
		}()
	}
	wg.Wait()
	var ok []api.Runtime
	for i := range ids {
		if errs[i] == nil {
			ok = append(ok, rts[i])
		}
	}
	var err error
	switch {
	case len(ids) == 1 && errs[0] != nil:
		return errs[0]
	case len(ids) == 1 && asJSON:
		err = printJSON(env.stdout, ok[0])
	case asJSON:
		err = printJSON(env.stdout, ok)
	default:
		for _, rt := range ok {
			say(env.stdout, "%s\n", runtimeLine("stopped", rt))
		}
	}
	if failed := len(ids) - len(ok); failed > 0 && err == nil {
		err = fmt.Errorf("%d of %d runtimes not stopped (see above)", failed, len(ids))
	}
	return err
}
