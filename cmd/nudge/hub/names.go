package hub

import "strings"

// Names of the hub's stream, buckets and subjects.
const (
	triggerStream = "NUDGE_TRIGGERS" // work queue: nudge.trig.TO.FROM
	bucketRTs     = "nudge_runtimes" // HOST → the host's runtimes
	bucketWS      = "nudge_ws"       // WORKSPACE → HOST (written by the hub only)
	bucketRcpt    = "nudge_receipts" // WRITER.ID → a receipt
)

// A trigger for host to from host from, and a request to host to from host from: the
// sender's name is in the subject, where the hub's permissions put it (a member publishes
// only with its own), so the receiver takes it from there, never from the message.
func triggerSubject(to, from string) string { return "nudge.trig." + to + "." + from }
func triggersFor(to string) string          { return "nudge.trig." + to + ".*" }
func ctlSubject(to, from, op string) string { return "nudge.ctl." + to + "." + from + "." + op }
func ctlFor(to string) string               { return "nudge.ctl." + to + ".*.*" }
func durable(host string) string            { return "host_" + host }
func deliverSubject(to string) string       { return "nudge.deliver." + to }
func inboxPrefix(host string) string        { return "_INBOX_" + host }

// token is the nth dot-separated token of a subject ("" past its end).
func token(subject string, n int) string {
	for range n {
		i := strings.IndexByte(subject, '.')
		if i < 0 {
			return ""
		}
		subject = subject[i+1:]
	}
	tok, _, _ := strings.Cut(subject, ".")
	return tok
}
