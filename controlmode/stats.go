package controlmode

import "sync/atomic"

// Stats are a connection's counters since Dial.
type Stats struct {
	Lines         uint64 // lines read from tmux
	OutputLines   uint64 // %output and %extended-output lines
	OutputBytes   uint64 // decoded pane output bytes passed to OnOutput
	SkippedLines  uint64 // over-long lines skipped (MaxLine, MaxReplyLine)
	Pauses        uint64 // %pause notifications (each answered with continue)
	Unsolicited   uint64 // flags-0 blocks and blocks with no pending command
	Unknown       uint64 // lines passed through as *Unknown (includes Malformed)
	Malformed     uint64 // known notifications with bad fields
	Commands      uint64 // command lines written
	CommandErrors uint64 // replies ending in %error
	Abandoned     uint64 // waits ended by a context before the reply came
}

type counters struct {
	lines, outputLines, outputBytes, skipped, pauses, unsolicited atomic.Uint64
	unknown, malformed, commands, commandErrors, abandoned        atomic.Uint64
}

// Stats returns a snapshot of the connection's counters.
func (c *Conn) Stats() Stats {
	s := &c.stats
	return Stats{
		Lines: s.lines.Load(), OutputLines: s.outputLines.Load(),
		OutputBytes: s.outputBytes.Load(), SkippedLines: s.skipped.Load(),
		Pauses: s.pauses.Load(), Unsolicited: s.unsolicited.Load(),
		Unknown: s.unknown.Load(), Malformed: s.malformed.Load(),
		Commands: s.commands.Load(), CommandErrors: s.commandErrors.Load(),
		Abandoned: s.abandoned.Load(),
	}
}
