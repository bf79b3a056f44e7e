package tui

import (
	"fmt"
	"io"

	"github.com/nudgehq/nudge/cmd/nudge/api"
)

// PrintAuditVerified prints the answer of `nudge audit --verify [--archive]`, or returns
// the error that makes the command fail when the chain does not verify.
func PrintAuditVerified(w io.Writer, res api.AuditVerified, archive bool) error {
	if !res.OK {
		return fmt.Errorf("audit log does NOT verify after %d records: %s", res.Records, res.Error)
	}
	from := ""
	if res.ArchivedThrough > 0 {
		from = fmt.Sprintf(" from seq %d on (older ones sealed into the archive)", res.ArchivedThrough+1)
	}
	fmt.Fprintf(w, "audit log verified: %d records%s, hash chain intact\n", res.Records, from)
	if archive {
		fmt.Fprintf(w, "audit archive verified: %d sealed records, joined to the kept log\n", res.Archived)
	}
	return nil
}
