package ack

import (
	"context"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/hashicorp/go-hclog"

	"github.com/nudgehq/nudge"
	"github.com/nudgehq/nudge/ack/record"
)

// RecordSink takes what Records read in the runtimes' records. Every method runs on the
// runtime's reader goroutine and must not block for long. The Tracker's records watcher
// is the daemon's (watch.go); a test may have its own.
type RecordSink interface {
	// Prompt: a trigger's prompt is in the record as a user message (evidence:
	// file:line). The agent has it: it is never to be given again. It answers whose
	// trigger it was (Tracker.RecordAck): the first of this runtime's own proves the
	// record is this runtime's (Live); one of another runtime's proves it is not, and the
	// reader ends with Foreign.
	Prompt(runtimeID, triggerID, evidence string) RecordOwner
	// Foreign: the record at path is another runtime's (two agents in one directory);
	// the sink follows again, passing path over (record.Spec.Exclude). It runs on a
	// goroutine of its own (it replaces the reader).
	Foreign(runtimeID, path string)
	// Reply: the turn that took the trigger's prompt ended.
	Reply(r nudge.ReplyRead)
	// Session: the record names the agent's session id: the id the record file named
	// first, once a prompt of this runtime's was seen in that file (see tellSession).
	Session(runtimeID, sessionID string)
	// Found: the runtime's record file was found (the first event read from it).
	Found(runtimeID, path string)
	// End: the runtime's reader ended on its own (err: why; record.ErrUnknownFormat
	// means the CLI's format changed): acks rest on the screen again.
	End(runtimeID string, err error)
}

// RecordsConfig says whom Records tell what the records show.
type RecordsConfig struct {
	// Sink takes what the records show; nil: every prompt is remembered as seen and
	// nothing is told.
	Sink RecordSink
	// Open opens a reader (record.Open by default; tests replace it).
	Open func(f record.Format, s record.Spec) record.Reader
	Now  func() time.Time
	// Logger has what a record says that is not believed; nil: nothing is logged.
	Logger hclog.Logger
}

// Records follows the session records of the runtimes whose profile names one and turns
// them into facts about triggers: which prompts the agent has (by the envelope ids of
// its user messages: structural role only, never a reply's text), whether a turn is
// open, and the reply of each turn that took a prompt. One goroutine a followed runtime;
// Follow replaces a runtime's reader, Stop and Close end them and wait.
type Records struct {
	cfg RecordsConfig

	mu     sync.Mutex
	rts    map[string]*follow
	closed bool // Close ran: Follow starts nothing
	wg     sync.WaitGroup
}

// follow is one runtime's reader and what it read.
type follow struct {
	r    record.Reader
	done chan struct{}

	mu      sync.Mutex
	live    bool              // the record was found and is being read
	mine    bool              // it showed a prompt of this runtime's: it is this runtime's record
	inTurn  bool              // the record shows a turn open
	seen    map[string]string // trigger id → evidence of its user message
	order   []string          // seen's keys, oldest first (bounded)
	open    []*turnReply      // the triggers the open turn took
	turnEnd time.Time         // the last turn's end (zero: none yet)
	syncSeq uint64            // the last Sync request's number
	syncs   []syncWait        // the Sync requests not answered yet
	foreign bool              // Sink.Foreign was called: this reader is being replaced
	// sessions: the session id each record file (or database key) named first. A file
	// that names another later (its session_meta rewritten) is not believed.
	sessions map[string]string
	told     string // the session id reported (Sink.Session)

	format record.Format // the record's format (which names its files: record.NamesSession)
	spec   record.Spec   // what the record was looked for by: its session id and directory
}

// maxSessions bounds the record files whose session a follow remembers.
const maxSessions = 64

// syncWait is one Sync waiting for the reader to answer request n.
type syncWait struct {
	n    uint64
	done chan struct{}
}

type turnReply struct {
	id        string
	turn      string // the record's user message that holds the prompt ("" unknown)
	file      string // where the prompt's user message is (ev.File, ev.Line)
	line      int64
	b         strings.Builder
	truncated bool
}

// What a runtime's record may cost: the record is the agent's to write, and it can hold
// any number of envelope ids. Per runtime Records keeps at most maxSeen ids with their
// evidence (an id is at most 128 bytes, inject.MaxFieldLen), and at most maxOpen prompts
// waiting for their turn's reply, each reply within record.MaxText: with the reader's own
// bound (record.Open) a runtime's record costs a few tens of MiB at most, however many
// ids or bytes it holds.
const (
	// maxSeen bounds the trigger ids remembered per runtime.
	maxSeen = 1024
	// maxOpen bounds the prompts waiting for the reply of the turn that took them; past
	// it the oldest is dropped (its prompt was acked; its reply is not read).
	maxOpen = 64
	// MaxMessageIDs bounds the envelope ids read from one user message (a CLI joins the
	// few prompts it queued; more are not envelopes nudge typed).
	MaxMessageIDs = 64
)

// NewRecords returns a Records with no runtime followed.
func NewRecords(cfg RecordsConfig) *Records {
	if cfg.Open == nil {
		cfg.Open = func(f record.Format, s record.Spec) record.Reader { return record.Open(f, s, record.Options{}) }
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &Records{cfg: cfg, rts: map[string]*follow{}}
}

// Follow starts following runtimeID's record in format f (replacing a reader it had).
func (rs *Records) Follow(runtimeID string, f record.Format, s record.Spec) {
	rs.mu.Lock()
	if rs.closed {
		rs.mu.Unlock()
		return
	}
	fl := &follow{r: rs.cfg.Open(f, s), done: make(chan struct{}), seen: map[string]string{}, sessions: map[string]string{}, format: f, spec: s}
	old := rs.rts[runtimeID]
	rs.rts[runtimeID] = fl
	rs.mu.Unlock()
	if old != nil {
		old.r.Close()
		<-old.done
	}
	go rs.run(runtimeID, fl)
}

// Following reports whether runtimeID's record is being followed.
func (rs *Records) Following(runtimeID string) bool {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	return rs.rts[runtimeID] != nil
}

// Stop ends runtimeID's reader, if any, and waits for it.
func (rs *Records) Stop(runtimeID string) {
	rs.mu.Lock()
	fl := rs.rts[runtimeID]
	delete(rs.rts, runtimeID)
	rs.mu.Unlock()
	if fl != nil {
		fl.r.Close()
		<-fl.done
	}
}

// Close ends every reader and waits for them (and for the refollows under way).
func (rs *Records) Close() {
	rs.mu.Lock()
	rs.closed = true
	ids := make([]string, 0, len(rs.rts))
	for id := range rs.rts {
		ids = append(ids, id)
	}
	rs.mu.Unlock()
	for _, id := range ids {
		rs.Stop(id)
	}
	rs.wg.Wait()
}

func (rs *Records) get(runtimeID string) *follow {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	return rs.rts[runtimeID]
}

// Has reports whether the trigger's prompt is in runtimeID's record, and where.
func (rs *Records) Has(runtimeID, triggerID string) (string, bool) {
	fl := rs.get(runtimeID)
	if fl == nil {
		return "", false
	}
	fl.mu.Lock()
	defer fl.mu.Unlock()
	ev, ok := fl.seen[triggerID]
	return ev, ok
}

// Working reports whether runtimeID's record is being read and shows a turn open: the
// agent is working, and a prompt typed meanwhile waits in its own queue.
func (rs *Records) Working(runtimeID string) bool {
	fl := rs.get(runtimeID)
	if fl == nil {
		return false
	}
	fl.mu.Lock()
	defer fl.mu.Unlock()
	return fl.live && fl.mine && fl.inTurn
}

// Live reports whether runtimeID's record is being read and has shown a prompt sent to
// this runtime (so it is this runtime's, not a neighbour's in the same directory).
func (rs *Records) Live(runtimeID string) bool {
	fl := rs.get(runtimeID)
	if fl == nil {
		return false
	}
	fl.mu.Lock()
	defer fl.mu.Unlock()
	return fl.live && fl.mine
}

func (rs *Records) run(runtimeID string, fl *follow) {
	defer close(fl.done)
	for ev := range fl.r.Events() {
		if ev.Kind == record.Synced {
			fl.synced(ev.Seq)
			continue
		}
		if !fl.live {
			fl.mu.Lock()
			fl.live = true
			fl.mu.Unlock()
			if rs.cfg.Sink != nil {
				rs.cfg.Sink.Found(runtimeID, ev.File)
			}
		}
		rs.event(runtimeID, fl, ev)
	}
	fl.mu.Lock()
	fl.live, fl.inTurn = false, false
	fl.mu.Unlock()
	if err := fl.r.Err(); err != nil && rs.cfg.Sink != nil {
		rs.cfg.Sink.End(runtimeID, err)
	}
}

func evidence(ev record.Event) string { return ev.File + ":" + strconv.FormatInt(ev.Line, 10) }

func (rs *Records) event(runtimeID string, fl *follow, ev record.Event) {
	switch ev.Kind {
	case record.SessionKnown:
		if !fl.believable(ev) {
			rs.log().Warn("a record names a session it cannot be: its id not taken", "runtime_id", runtimeID, "file", ev.File, "session_id", ev.SessionID, "dir", ev.Dir)
			return
		}
		fl.mu.Lock()
		if ev.SessionID != "" && fl.sessions[ev.File] == "" && len(fl.sessions) < maxSessions {
			fl.sessions[ev.File] = ev.SessionID
		}
		fl.mu.Unlock()
	case record.UserMessage:
		rs.userMessage(runtimeID, fl, ev)
	case record.TurnStarted:
		fl.mu.Lock()
		fl.inTurn = true
		fl.mu.Unlock()
	case record.AssistantText:
		fl.mu.Lock()
		for _, tr := range fl.open[:fl.answered(ev)] {
			tr.add(ev.Text, ev.Truncated)
		}
		fl.mu.Unlock()
	case record.TurnEnded:
		rs.turnEnded(runtimeID, fl, ev)
	}
}

// userMessage takes the prompts of a user message in the record: each one not taken
// before is reported (Sink.Prompt) and waits for the reply of the turn that answers it. A
// prompt is taken (remembered, and never reported again) once Sink.Prompt knows whose it is;
// one it does not (RecordUnknown: the agent wrote the envelope of a trigger not handed to
// it yet) is reported again when it shows again, so that the genuine prompt, typed
// later, still acks its trigger and gets its reply.
func (rs *Records) userMessage(runtimeID string, fl *follow, ev record.Event) {
	var fresh []string
	fl.mu.Lock()
	for _, id := range EnvelopeIDs(ev.Text) {
		if _, ok := fl.seen[id]; ok {
			continue // the same prompt again (a file read anew): once is enough
		}
		if rs.cfg.Sink == nil {
			fl.remember(id, evidence(ev))
		}
		if len(fl.open) == maxOpen {
			fl.open[0] = nil
			fl.open = fl.open[1:]
		}
		fl.open = append(fl.open, &turnReply{id: id, turn: ev.Turn, file: ev.File, line: ev.Line})
		fresh = append(fresh, id)
	}
	fl.mu.Unlock()
	if rs.cfg.Sink == nil {
		return
	}
	for _, id := range fresh {
		owner := rs.cfg.Sink.Prompt(runtimeID, id, evidence(ev))
		if owner != RecordUnknown {
			fl.mu.Lock()
			fl.remember(id, evidence(ev))
			fl.mu.Unlock()
		}
		switch owner {
		case RecordMine:
			fl.mu.Lock()
			fl.mine = true
			fl.mu.Unlock()
			rs.tellSession(runtimeID, fl, ev.File)
		case RecordForeign:
			fl.mu.Lock()
			mine, told := fl.mine, fl.foreign
			fl.mu.Unlock()
			// A record shown to be another's is passed over; so is the other's part of a
			// record spanning several (OpenCode's sessions of one directory), even after
			// this runtime's own prompts were seen in it. Once per reader: it is replaced.
			if (!mine || ev.File != fl.r.Path()) && !told && !fl.ownByName(ev.File) {
				fl.mu.Lock()
				fl.foreign = true
				fl.mu.Unlock()
				rs.wg.Add(1)
				go func(path string) { // it replaces this reader: not on its goroutine
					defer rs.wg.Done()
					rs.cfg.Sink.Foreign(runtimeID, path)
				}(ev.File)
			}
		}
	}
}

// believable reports whether the session a record file names may be the runtime's: the
// file's name carries its id (the CLI names the file for its session; an agent writing a
// file of its own can put any id in its header), the id is the one the runtime was looked
// for by, if any, and the directory the session says it runs in, if it says, is the
// runtime's. A session named otherwise is not taken for the runtime (its prompts, resume
// and approvals would go to another session).
func (fl *follow) believable(ev record.Event) bool {
	switch {
	case ev.SessionID == "":
		return true
	case ev.File != "" && !record.NamesSession(fl.format, ev.File, ev.SessionID):
		return false
	case fl.spec.SessionID != "" && ev.SessionID != fl.spec.SessionID:
		return false
	case ev.Dir != "" && fl.spec.Dir != "" && !sameDir(ev.Dir, fl.spec.Dir):
		return false
	}
	return true
}

func (rs *Records) log() hclog.Logger {
	if rs.cfg.Logger == nil {
		return hclog.NewNullLogger()
	}
	return rs.cfg.Logger
}

// ownByName reports whether file is the runtime's own record by its name (the session it
// was looked for by names it): another runtime's envelope in it was written there by the
// agent, and looking again would find the same file.
func (fl *follow) ownByName(file string) bool {
	if fl.spec.SessionID == "" {
		return false
	}
	_, named := fl.format.(record.Namer)
	return named && record.NamesSession(fl.format, file, fl.spec.SessionID)
}

// sameDir reports whether a and b are one directory (symlinks resolved).
func sameDir(a, b string) bool {
	if filepath.Clean(a) == filepath.Clean(b) {
		return true
	}
	ra, err1 := filepath.EvalSymlinks(a)
	rb, err2 := filepath.EvalSymlinks(b)
	return err1 == nil && err2 == nil && ra == rb
}

// tellSession reports the session that record file names (Sink.Session), once a prompt of
// this runtime's was seen in it: a record's session id is taken only from a record shown
// to be this runtime's, and only the id its file named first (an agent that rewrites its
// record's header to name another session, another workspace's, is not believed).
func (rs *Records) tellSession(runtimeID string, fl *follow, file string) {
	fl.mu.Lock()
	s := fl.sessions[file]
	tell := s != "" && s != fl.told
	if tell {
		fl.told = s
	}
	fl.mu.Unlock()
	if tell {
		rs.cfg.Sink.Session(runtimeID, s)
	}
}

// turnEnded gives the turn's reply to the prompts it answered.
func (rs *Records) turnEnded(runtimeID string, fl *follow, ev record.Event) {
	at := ev.At
	if at.IsZero() {
		at = rs.cfg.Now()
	}
	fl.mu.Lock()
	n := fl.answered(ev)
	open := fl.open[:n:n]
	fl.open = append([]*turnReply(nil), fl.open[n:]...)
	fl.inTurn, fl.turnEnd = false, at
	fl.mu.Unlock()
	if rs.cfg.Sink == nil {
		return
	}
	for _, tr := range open {
		rs.cfg.Sink.Reply(nudge.ReplyRead{RuntimeID: runtimeID, TriggerID: tr.id,
			Text: tr.b.String(), Truncated: tr.truncated, EndedAt: at, Evidence: evidence(ev)})
	}
}

// Sync reads runtimeID's record to its end now and returns once what it holds is known
// (Has, Working): before a prompt is typed again, a write the reader has not seen yet
// (a database commit that was not visible when its file event came) counts. It returns
// at once for a runtime whose record is not followed, or whose reader cannot (nil), when
// the reader ends, or with ctx's error.
func (rs *Records) Sync(ctx context.Context, runtimeID string) error {
	fl := rs.get(runtimeID)
	if fl == nil {
		return nil
	}
	s, ok := fl.r.(record.Syncer)
	if !ok {
		return nil
	}
	fl.mu.Lock()
	fl.syncSeq++
	w := syncWait{n: fl.syncSeq, done: make(chan struct{})}
	fl.syncs = append(fl.syncs, w)
	fl.mu.Unlock()
	s.Sync(w.n)
	select {
	case <-w.done:
		return nil
	case <-fl.done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// synced releases the Syncs answered by the reader's read up to request n.
func (fl *follow) synced(n uint64) {
	fl.mu.Lock()
	defer fl.mu.Unlock()
	keep := fl.syncs[:0]
	for _, w := range fl.syncs {
		if w.n <= n {
			close(w.done)
		} else {
			keep = append(keep, w)
		}
	}
	fl.syncs = keep
}

// answered returns how many of the open prompts, oldest first, the turn answering the
// record's user message turn takes: those up to that message's last, or all of them
// when the record does not say which message a turn answers (turn "") or names one that
// holds none of them. A prompt queued after it waits for its own turn (OpenCode writes
// a queued prompt's message while the running turn goes on). fl.mu is held.
func (fl *follow) answered(ev record.Event) int {
	if ev.Turn == "" {
		// A turn answers the prompts before it: not one whose message lies after it in the
		// same file (a file read again from its start, its old turns' ends read anew,
		// while a prompt read the first time waits for its own).
		for i, tr := range fl.open {
			if ev.Line > 0 && tr.line > 0 && tr.file == ev.File && tr.line >= ev.Line {
				return i
			}
		}
		return len(fl.open)
	}
	for i := len(fl.open) - 1; i >= 0; i-- {
		if fl.open[i].turn == ev.Turn {
			return i + 1
		}
	}
	return len(fl.open)
}

// remember records a trigger id as seen; fl.mu is held.
func (fl *follow) remember(id, ev string) {
	fl.seen[id] = ev
	fl.order = append(fl.order, id)
	if len(fl.order) > maxSeen {
		delete(fl.seen, fl.order[0])
		fl.order = fl.order[1:]
	}
}

// add appends one piece of the answer, separated from the last by a blank line, within
// record.MaxText.
func (tr *turnReply) add(text string, truncated bool) {
	if tr.truncated || text == "" {
		tr.truncated = tr.truncated || truncated
		return
	}
	if tr.b.Len() > 0 {
		text = "\n\n" + text
	}
	if room := max(record.MaxText-tr.b.Len(), 0); len(text) > room {
		for room > 0 && !utf8.RuneStart(text[room]) {
			room-- // cut on a rune boundary
		}
		text, truncated = text[:room], true
	}
	tr.b.WriteString(text)
	tr.truncated = truncated
}

// envelopeHead opens an envelope (inject.Envelope.Wrap): the id follows it.
const envelopeHead = "[BRIDGE_TRIGGER id="

// envelopeFoot closes an envelope.
const envelopeFoot = "[/BRIDGE_TRIGGER]"

// EnvelopeIDs returns the trigger ids of the envelopes in a user message's text: those
// that open a line, and those that follow another envelope's end directly (spaces or
// tabs between). A message may hold several: a CLI joins the prompts it queued into one
// turn, on lines of their own (Claude Code) or glued to the previous prompt's end
// (OpenCode appends a prompt typed while it is still taking in the previous one to that
// one's text: "…[/BRIDGE_TRIGGER][BRIDGE_TRIGGER id=…"). Each of them is in the agent's
// hands. An envelope quoted inside other text is not one. At most MaxMessageIDs are
// returned, the first ones.
func EnvelopeIDs(text string) []string {
	var ids []string
	for off := 0; len(ids) < MaxMessageIDs; {
		i := strings.Index(text[off:], envelopeHead)
		if i < 0 {
			return ids
		}
		i += off
		off = i + len(envelopeHead)
		if !opensEnvelope(text, i) {
			continue
		}
		end := off
		for end < len(text) && end-off < 128 && text[end] != ' ' && text[end] != ']' && text[end] != '\n' {
			end++
		}
		if end > off {
			ids = append(ids, text[off:end])
		}
	}
	return ids
}

// opensEnvelope reports whether the envelope head at text[i:] starts a line or follows an
// envelope's end (spaces or tabs between).
func opensEnvelope(text string, i int) bool {
	before := strings.TrimRight(text[:i], " \t")
	return i == 0 || text[i-1] == '\n' || strings.HasSuffix(before, envelopeFoot)
}
