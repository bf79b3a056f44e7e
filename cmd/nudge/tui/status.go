package tui

import (
	"context"
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/nudgehq/nudge"
	"github.com/nudgehq/nudge/cmd/nudge/api"
)

// The status a person reads outside the dashboard: `nudge status` (a table), `nudge
// status --short` and the tmux status bar (one line), and the last known state read from
// the store while the daemon is down.

// StatusEntry is what the status line shows of one runtime.
type StatusEntry struct {
	Workspace, Role string
	Status          nudge.Status
	State           string // StateWord
	Busy            bool   // a human at the keyboard
	Queue           int
}

// EntryOf is the status line's entry of a runtime with queue open triggers.
func EntryOf(rt nudge.Runtime, queue int) StatusEntry {
	return StatusEntry{rt.WorkspaceID, rt.Role, rt.Status, RuntimeState(rt), rt.OperatorBusy, queue}
}

// ShortLine is the one-line status for a tmux status bar: `[reviewer: READY]
// [executioner: BUSY]`, sorted by workspace and role. With qualify, roles are shown as
// ws/role (several workspaces on one line). A human at the keyboard is a trailing `*`,
// open triggers `+N`; deregistered runtimes are left out.
func ShortLine(es []StatusEntry, qualify bool) string {
	es = append([]StatusEntry(nil), es...)
	sort.Slice(es, func(i, j int) bool {
		if es[i].Workspace != es[j].Workspace {
			return es[i].Workspace < es[j].Workspace
		}
		return es[i].Role < es[j].Role
	})
	var b strings.Builder
	for _, e := range es {
		if e.Status == nudge.StatusDeregistered {
			continue
		}
		if b.Len() > 0 {
			b.WriteByte(' ')
		}
		name := e.Role
		if qualify {
			name = e.Workspace + "/" + e.Role
		}
		b.WriteString("[" + name + ": " + e.State)
		if e.Busy {
			b.WriteByte('*')
		}
		if e.Queue > 0 {
			fmt.Fprintf(&b, " +%d", e.Queue)
		}
		b.WriteByte(']')
	}
	return b.String()
}

// ShortStatus is ShortLine of rows, qualified when they span workspaces.
func ShortStatus(rows []StatusRow) string {
	es := make([]StatusEntry, 0, len(rows))
	wss := map[string]bool{}
	for _, r := range rows {
		es = append(es, EntryOf(r.Runtime.Runtime, r.QueueDepth))
		wss[r.WorkspaceID] = true
	}
	return ShortLine(es, len(wss) > 1)
}

// StatusRow is one line of `nudge status`: a runtime and its last trigger.
type StatusRow struct {
	api.Runtime
	State       string       `json:"state"`
	LastTrigger *api.Trigger `json:"last_trigger,omitempty"`
	// StaleAsOf: the row was read from the store while the daemon was down; the store
	// was last written then.
	StaleAsOf *time.Time `json:"stale_as_of,omitempty"`
}

// FetchStatus reads the runtimes (of workspace, if not "") and, unless short, each one's
// last trigger from the daemon.
func FetchStatus(ctx context.Context, c *api.Client, workspace string, short bool) ([]StatusRow, error) {
	rts, err := c.Runtimes(ctx, workspace)
	if err != nil {
		return nil, err
	}
	rows := make([]StatusRow, 0, len(rts))
	for _, rt := range rts {
		row := StatusRow{Runtime: rt, State: apiStateWord(rt)}
		if !short {
			ts, err := c.Triggers(ctx, api.TriggerFilter{RuntimeID: rt.RuntimeID, Newest: true, Limit: 1})
			if err != nil {
				return nil, err
			}
			if len(ts) > 0 {
				row.LastTrigger = &ts[0]
			}
		}
		rows = append(rows, row)
	}
	return rows, nil
}

// LastKnown is the status rows of the runtimes a store last held (of workspace, if not
// ""), each with its newest trigger, for when the daemon is down. Deregistered runtimes
// are left out; queue depths are not known (0).
func LastKnown(rts []nudge.Runtime, last map[string]nudge.Trigger, workspace string) []StatusRow {
	rows := []StatusRow{}
	for _, rt := range rts {
		if rt.Status == nudge.StatusDeregistered || workspace != "" && rt.WorkspaceID != workspace {
			continue
		}
		row := StatusRow{Runtime: api.NewRuntime(rt, 0), State: RuntimeState(rt)}
		if t, ok := last[rt.RuntimeID]; ok {
			row.LastTrigger = &t
		}
		rows = append(rows, row)
	}
	return rows
}

// PrintStatus prints the table of `nudge status`.
func PrintStatus(w io.Writer, rows []StatusRow, now time.Time) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "WORKSPACE\tROLE\tPANE\tAGENT\tSTATE\tSTATUS\tSUMMARY\tSINCE\tQUEUE\tLAST TRIGGER\tRECEIPT")
	for _, r := range rows {
		state := r.State
		if r.OperatorBusy {
			state += "*"
		}
		last, receipt := "-", "-"
		if r.LastTrigger != nil {
			last = r.LastTrigger.TriggerID + " (" + Ago(r.LastTrigger.UpdatedAt, now) + ")"
			receipt = apiReceiptWord(*r.LastTrigger)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%d\t%s\t%s\n", r.WorkspaceID, r.Role, orDash(r.PaneID), r.Agent,
			state, r.Status, orDash(Truncate(nudge.StripANSI(r.Summary), 40)), Ago(r.StatusSince, now), r.QueueDepth,
			Truncate(last, 40), receipt)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if len(rows) > 0 {
		fmt.Fprintln(w, "(* = a human is typing in the pane)")
	}
	return nil
}

// StaleNote is the line printed under a status read from the store: what it is and how
// old.
func StaleNote(written, now time.Time) string {
	return fmt.Sprintf("STALE: the daemon is not running; the last known state, as the store held it at %s (%s ago). Start it: nudge serve",
		written.Format(time.RFC3339), Ago(written, now))
}

// StaleFilesNote is the line printed under a status read from the daemon's status files
// (its socket did not answer): what it is and how old.
func StaleFilesNote(written, now time.Time) string {
	return fmt.Sprintf("STALE: the daemon is not running (its socket does not answer); the last known state, from its status files written at %s (%s ago). Start it: nudge serve",
		written.Format(time.RFC3339), Ago(written, now))
}
