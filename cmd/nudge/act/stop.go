package act

import (
	"context"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/nudgehq/nudge/cmd/nudge/api"
	"github.com/nudgehq/nudge/cmd/nudge/tui"
)

// StopProgress is how often Stop says it is still waiting for a program to end.
const StopProgress = 2 * time.Second

// Stop stops ids at once, saying on stderr what it does until each has ended, and
// prints the stopped records (one record alone when one id was given).
func Stop(ctx context.Context, stdout, stderr io.Writer, c *api.Client, ids []string, reason string, asJSON bool) error {
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
			say(stderr, "stopping %s: C-c to its program, then SIGHUP, SIGTERM and SIGKILL by pid if it has not ended (serve --stop-timeout, --kill-grace)...\n", id)
			done := make(chan struct{})
			go func() {
				start := time.Now()
				tick := time.NewTicker(StopProgress)
				defer tick.Stop()
				for {
					select {
					case <-done:
						return
					case <-tick.C:
						say(stderr, "  %s: still waiting for its program to end (%s)...\n", id, time.Since(start).Round(time.Second))
					}
				}
			}()
			rts[i], errs[i] = c.Stop(ctx, id, reason)
			close(done)
			if errs[i] != nil {
				if len(ids) > 1 { // one id alone: its error is the command's
					say(stderr, "stop %s: %v\n", id, errs[i])
				}
				return
			}
			say(stderr, "stopped %s: %s\n", id, rts[i].Status)
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
		err = tui.PrintJSON(stdout, ok[0])
	case asJSON:
		err = tui.PrintJSON(stdout, ok)
	default:
		for _, rt := range ok {
			say(stdout, "%s\n", RuntimeLine("stopped", rt))
		}
	}
	if failed := len(ids) - len(ok); failed > 0 && err == nil {
		err = fmt.Errorf("%d of %d runtimes not stopped (see above)", failed, len(ids))
	}
	return err
}
