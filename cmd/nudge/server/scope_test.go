package server

import (
	"strings"
	"testing"
	"testing/quick"

	"github.com/nudgehq/nudge"
	"github.com/nudgehq/nudge/cmd/nudge/auth"
)

// The scope filter as a property: a caller scoped to some workspaces sees a record iff
// its workspace (direct, through the runtime id, or through the trigger) is one of
// them; a record of no workspace only unrestricted callers see.
func TestScopeFilterProperty(t *testing.T) {
	names := []string{"", "a", "b", "c_d", "a-b"}
	f := func(ws, rtWS, trWS, mine uint8, all bool, runtimeTok bool) bool {
		pick := func(n uint8) string { return names[int(n)%len(names)] }
		c := auth.Caller{Subject: "t"}
		if !all {
			c.Workspaces = []string{pick(mine)}
			if c.Workspaces[0] == "" {
				c.Workspaces = []string{"z"}
			}
			c.Verbs = []string{"read"}
		}
		if runtimeTok {
			c.RuntimeID = "rt_" + strings.Join(c.Workspaces, "") + ".r"
		}
		rec := nudge.AuditRecord{Workspace: pick(ws), TriggerID: "t1"}
		if pick(rtWS) != "" {
			rec.RuntimeID = "rt_" + pick(rtWS) + ".role"
		}
		lookup := func(string) string { return pick(trWS) }
		eff := rec.Workspace
		if eff == "" && rec.RuntimeID != "" {
			eff = pick(rtWS)
		}
		if eff == "" {
			eff = pick(trWS)
		}
		var want bool
		switch {
		case eff == "":
			want = c.Workspaces == nil && c.RuntimeID == ""
		case c.Workspaces == nil:
			want = true
		default:
			want = c.Workspaces[0] == eff
		}
		return c.Sees(auditWorkspace(rec, lookup)) == want && c.Sees(eff) == want
	}
	if err := quick.Check(f, &quick.Config{MaxCount: 5000}); err != nil {
		t.Fatal(err)
	}
}
