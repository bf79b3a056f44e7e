package tui

// The records the CLI prints: one as indented JSON (the API's field names), several as a
// JSON array or a table, a line each. Text from the daemon is escaped (Printable) so it
// cannot drive the terminal.

import (
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/nudgehq/nudge/cmd/nudge/api"
)

// PrintRecords prints one record as a JSON object or several as a JSON array (asJSON),
// else them all as a table under head, a line each from row (columns split by tabs).
func PrintRecords[T any](w io.Writer, asJSON bool, list []T, head string, row func(T) string) error {
	switch {
	case asJSON && len(list) == 1:
		return PrintJSON(w, list[0])
	case asJSON:
		return PrintJSON(w, list)
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, head)
	for _, v := range list {
		fmt.Fprintln(tw, row(v))
	}
	return tw.Flush()
}

// PrintJSON writes v as indented JSON.
func PrintJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// PrintRuntimes prints one runtime as JSON, or runtimes as the table of `nudge ls`.
func PrintRuntimes(w io.Writer, asJSON bool, rts ...api.Runtime) error {
	hosts := slices.ContainsFunc(rts, func(rt api.Runtime) bool { return rt.Host != "" })
	head := "RUNTIME\tWORKSPACE\tROLE\tAGENT\tPANE\tSTATE\tSTATUS\tOPERATOR\tINPUT\tQUEUE"
	if hosts {
		head += "\tHOST"
	}
	return PrintRecords(w, asJSON, rts, head, func(rt api.Runtime) string {
		op := "-"
		if rt.OperatorBusy {
			op = "busy"
		}
		state, status := RuntimeState(rt.Runtime), string(rt.Status) // the state word as nudge status shows it
		switch rt.Breaker {                                          // the circuit breaker after repeated failed triggers
		case "open":
			status += "+cooldown"
		case "half_open":
			status += "+probing"
		}
		line := fmt.Sprintf("%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%d", rt.RuntimeID, rt.WorkspaceID, rt.Role, rt.Agent,
			orDash(rt.PaneID), state, status, op, orDash(string(rt.InputLine)), rt.QueueDepth)
		if hosts {
			line += "\t" + orDash(rt.Host)
		}
		return line
	})
}

// PrintUnmanaged prints the panes no runtime claims, as JSON or as a table under a line
// that says how to adopt one (nothing for none, as a table).
func PrintUnmanaged(w io.Writer, asJSON bool, now time.Time, ps ...api.Stray) error {
	if asJSON {
		return PrintJSON(w, ps) // a list, also of one
	}
	if len(ps) == 0 {
		return nil
	}
	if !asJSON {
		fmt.Fprintln(w, "\nUNMANAGED PANES (opened by hand; adopt one: nudge register --workspace WS --role ROLE --target PANE_ID)")
	}
	return PrintRecords(w, asJSON, ps, "WORKSPACE\tPANE_ID\tTARGET\tWINDOW\tCOMMAND\tSEEN", func(p api.Stray) string {
		return fmt.Sprintf("%s\t%s\t%s\t%s\t%s\t%s", p.WorkspaceID, p.PaneID, Printable(p.Target), Printable(p.TmuxWindow),
			Printable(p.Command), Ago(p.SeenAt, now))
	})
}

// PrintTriggers prints one receipt as JSON, or receipts as a table.
func PrintTriggers(w io.Writer, asJSON bool, ts ...api.Trigger) error {
	return PrintRecords(w, asJSON, ts, "TRIGGER\tWORKSPACE\tAGENT\tRUNTIME\tSTATE\tRESULT\tCODE\tUPDATED\tMESSAGE", func(t api.Trigger) string {
		return fmt.Sprintf("%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s", t.TriggerID, t.WorkspaceID, t.Agent, orDash(t.RuntimeID),
			t.State, orDash(string(t.Result)), orDash(string(t.ErrorCode)), t.UpdatedAt.Local().Format(time.TimeOnly),
			orDash(Truncate(Printable(t.Message), 60)))
	})
}

// AuditHeader heads the lines of PrintAudit.
const AuditHeader = "   SEQ TIME                    EVENT                      DETAIL"

// EventHeader heads the lines of PrintEvent.
const EventHeader = "SEQ\tTIME\tTYPE\tWORKSPACE\tABOUT"

// PrintAudit prints one audit record on one line, control characters escaped.
func PrintAudit(w io.Writer, r api.AuditRecord) {
	var parts []string
	add := func(k, v string) {
		if v != "" {
			parts = append(parts, k+"="+Printable(v))
		}
	}
	add("trigger", r.TriggerID)
	add("thread", r.ThreadID)
	add("runtime", r.RuntimeID)
	add("subject", r.Subject)
	if r.PeerUID != nil {
		add("uid", strconv.Itoa(*r.PeerUID))
	}
	add("code", string(r.Code))
	add("reason", r.Reason)
	if len(r.Detail) > 0 && string(r.Detail) != "null" {
		parts = append(parts, DetailWords(r.Detail))
	}
	fmt.Fprintf(w, "%6d %s %-26s %s\n", r.Seq, r.Time.Local().Format("2006-01-02 15:04:05.000"), r.Event, strings.Join(parts, " "))
}

// Printable escapes control characters so daemon text cannot drive the terminal: C0,
// DEL, C1 and the bidi controls (which reorder what the terminal shows).
func Printable(s string) string {
	if strings.IndexFunc(s, func(r rune) bool { return r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) || bidiControl(r) }) < 0 {
		return s
	}
	q := strconv.Quote(s)
	return q[1 : len(q)-1]
}

// PrintableText is Printable for text of several lines (an agent's reply): line feeds
// and tabs stay, the bidi controls are removed (as inject.Sanitize removes them from a
// prompt), every other control character is escaped.
func PrintableText(s string) string {
	control := func(r rune) bool { return r != '\n' && r != '\t' && (r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0)) }
	if strings.IndexFunc(s, func(r rune) bool { return control(r) || bidiControl(r) }) < 0 {
		return s
	}
	var b strings.Builder
	for _, r := range s {
		switch {
		case bidiControl(r):
		case control(r):
			q := strconv.QuoteRune(r)
			b.WriteString(q[1 : len(q)-1])
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// bidiControl reports whether r is a bidi override or isolate control, U+202A–U+202E
// and U+2066–U+2069: the ones inject.Sanitize removes from a prompt.
func bidiControl(r rune) bool { return r >= 0x202a && r <= 0x202e || r >= 0x2066 && r <= 0x2069 }

func CompactJSON(b []byte) string {
	var v any
	if json.Unmarshal(b, &v) != nil {
		return string(b)
	}
	out, _ := json.Marshal(v)
	return string(out)
}

// DetailWords is a record's JSON detail as key=value words, for a table cell: nested
// objects as dotted keys (ended_by=C-c, dialog.title=...), lists of values joined by
// commas, a value with a space or a quote in it quoted, control characters escaped. A
// detail that is not a JSON object is shown as detail=TEXT.
func DetailWords(b []byte) string {
	var v any
	if len(b) == 0 || string(b) == "null" {
		return ""
	}
	if json.Unmarshal(b, &v) != nil {
		return "detail=" + Printable(string(b))
	}
	var words []string
	flattenDetail(&words, "", v)
	return strings.Join(words, " ")
}

func flattenDetail(words *[]string, key string, v any) {
	join := func(k string) string {
		if key == "" {
			return k
		}
		return key + "." + k
	}
	switch x := v.(type) {
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			flattenDetail(words, join(k), x[k])
		}
	case []any:
		vals := make([]string, 0, len(x))
		for i, e := range x {
			switch e.(type) {
			case map[string]any, []any:
				flattenDetail(words, join(strconv.Itoa(i)), e)
			default:
				vals = append(vals, detailValue(e))
			}
		}
		if len(vals) > 0 || len(x) == 0 {
			*words = append(*words, cmp.Or(key, "detail")+"="+quoteWord(strings.Join(vals, ",")))
		}
	case nil:
	default:
		*words = append(*words, cmp.Or(key, "detail")+"="+quoteWord(detailValue(x)))
	}
}

func detailValue(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64)
	}
	return fmt.Sprint(v)
}

// quoteWord escapes s and quotes it when it would not read as one word.
func quoteWord(s string) string {
	if s == "" || strings.ContainsAny(s, " \t\"'=") {
		return strconv.Quote(s)
	}
	return Printable(s)
}

// PrintSchedules prints one schedule as JSON, or schedules as a table.
func PrintSchedules(w io.Writer, asJSON bool, all ...api.Schedule) error {
	return PrintRecords(w, asJSON, all, "SCHEDULE\tWORKSPACE\tAGENT\tEVERY\tNEXT\tPROMPT", func(s api.Schedule) string {
		return fmt.Sprintf("%s\t%s\t%s\t%s\t%s\t%.40q", s.ScheduleID, s.WorkspaceID, s.Agent, s.Every, s.NextAt.Local().Format(time.TimeOnly), s.Prompt)
	})
}

// PrintTokens prints one token record as JSON, or records as a table.
func PrintTokens(w io.Writer, asJSON bool, list ...api.TokenInfo) error {
	return PrintRecords(w, asJSON, list, "ID\tSUBJECT\tWORKSPACES\tVERBS\tEXPIRES\tSTATE", func(t api.TokenInfo) string {
		state := "valid"
		switch {
		case t.Revoked:
			state = "revoked"
		case time.Now().After(t.Expiry()):
			state = "expired"
		}
		return fmt.Sprintf("%s\t%s\t%s\t%s\t%s\t%s", t.ID, t.Subject, strings.Join(t.Workspaces, ","),
			strings.Join(t.Verbs, ","), t.Expiry().Local().Format(time.RFC3339), state)
	})
}

// PrintEvent prints one event on one line: seq, time, type, workspace, what it is about.
func PrintEvent(w io.Writer, ev api.Event) error {
	var about []string
	add := func(k, v string) {
		if v != "" {
			about = append(about, k+"="+Printable(v))
		}
	}
	switch {
	case ev.Trigger != nil:
		t := ev.Trigger
		add("trigger", t.TriggerID)
		add("agent", t.Agent)
		add("state", string(t.State))
		add("result", string(t.Result))
		add("error", string(t.ErrorCode))
	case ev.Runtime != nil:
		add("runtime", ev.Runtime.RuntimeID)
		add("status", string(ev.Runtime.Status))
	}
	if len(ev.Detail) > 0 {
		about = append(about, DetailWords(ev.Detail))
	}
	ws := ev.Workspace
	if ws == "" {
		ws = "-"
	}
	_, err := fmt.Fprintf(w, "%d\t%s\t%s\t%s\t%s\n", ev.Seq, ev.Time.Local().Format("2006-01-02 15:04:05.000"),
		ev.Type, ws, strings.Join(about, " "))
	return err
}
