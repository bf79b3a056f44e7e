package hub

// Names of the hub's stream, buckets and subjects.
const (
	triggerStream = "NUDGE_TRIGGERS" // work queue: nudge.trig.HOST
	bucketHosts   = "nudge_hosts"    // HOST → heartbeat (TTL)
	bucketRTs     = "nudge_runtimes" // HOST → the host's runtimes
	bucketWS      = "nudge_ws"       // WORKSPACE → HOST (written by the hub only)
	bucketRcpt    = "nudge_receipts" // WRITER.ID → a receipt
)

func triggerSubject(host string) string { return "nudge.trig." + host }
func ctlSubject(host, op string) string { return "nudge.ctl." + host + "." + op }
func durable(host string) string        { return "host_" + host }
func inboxPrefix(host string) string    { return "_INBOX_" + host }
