// Package record reads an agent CLI's own session record so that receipts rest on what
// the agent wrote down rather than on its screen.
//
// One file per CLI implements [Format]: where this runtime's record is ([Format.Locate])
// and how one complete line of it reads ([Format.Parse], a pure function each reader
// fuzzes in fuzz/). A Format is registered under the name a profile's `record:` field
// gives ([Register], [Lookup]): [Claude] "claude" (Claude Code's transcript), [Codex]
// "codex" (its rollout), [Gemini] "gemini" (Gemini CLI's chat recording) and [Pi] "pi"
// (its session file); [OpenCode] "opencode" keeps its sessions in a SQLite database, a
// [Table] read row by row. [Open] returns the [Reader] common to all formats: it
// finds the file once it exists, follows it as it grows (file events, no polling once
// found; its Sync, [Syncer], reads it to its end at once), feeds whole lines to Parse
// and emits [Event]s on a bounded channel; whoever opens a Reader owns it and calls
// Close. Package ack turns the events into acks and replies (ack.Records).
//
// The record is written by a process nudge does not trust: a user message counts only by
// its structural role in the record, never because text looks like an envelope; lines
// longer than [MaxLine] are skipped and counted; symlinks leading out of the CLI's own
// directory are not followed, and the record is read only as a regular file, opened
// without blocking and reopened (when replaced) by its name in the directory it was
// found in, never through a symlink ([ErrNotRegular] otherwise). A record in a format the
// reader does not know ends the reader with [ErrUnknownFormat]: the caller degrades to
// the screen and says so.
//
// What one reader may cost, however large the record: one line of at most MaxLine bytes
// (and what decoding it takes, for as long as it does), its Options.Buffer events of at
// most MaxText bytes of text each (16 MiB at the default 256), a 64 KiB read buffer; an
// OpenCode row longer than MaxLine is not loaded (its size is asked first). A read stops
// when the reader is closed, however fast the file grows.
package record

import (
	"errors"
	"sort"
	"sync"
	"time"
)

// MaxLine bounds one record line; a longer line is skipped and counted, never fatal.
const MaxLine = 4 << 20

// MaxText bounds the text an Event carries; longer text is cut and Truncated set.
const MaxText = 64 << 10

// Errors callers branch on.
var (
	// ErrNotYet: the record of this runtime does not exist yet (Locate; Open keeps waiting).
	ErrNotYet = errors.New("record: not written yet")
	// ErrUnknownFormat: the file is not in a format the reader knows (a CLI version that
	// changed it); the caller degrades to the screen.
	ErrUnknownFormat = errors.New("record: unknown format")
	// ErrUnknownReader: no Format is registered under the profile's record name.
	ErrUnknownReader = errors.New("record: no such reader")
	// ErrOutside: the record's path leads (through a symlink) out of the CLI's directory.
	ErrOutside = errors.New("record: path outside the CLI's directory")
	// ErrReplaced: the followed record file was replaced by another file under its name
	// (not the CLI's doing: it appends); the reader ends and the caller degrades to the
	// screen.
	ErrReplaced = errors.New("record: file replaced by another")
)

// Kind says what an Event reports.
type Kind uint8

// The kinds of Event, in the order a turn produces them.
const (
	// SessionKnown: the CLI's session id is known (Event.SessionID).
	SessionKnown Kind = iota + 1
	// UserMessage: a message with the user role entered the session (Event.Text, whole).
	UserMessage
	// TurnStarted: the agent began the turn that answers the last user message.
	TurnStarted
	// AssistantText: text the agent answered with in the current turn (Event.Text).
	AssistantText
	// TurnEnded: the agent's turn ended (it waits for the next prompt).
	TurnEnded
	// Synced: the reader read the record to its end at the Sync request Event.Seq (and
	// every one before it): the events before this one are all the record holds.
	Synced
)

var kindNames = [...]string{"", "session", "user", "turn_started", "assistant", "turn_ended", "synced"}

func (k Kind) String() string {
	if int(k) < len(kindNames) && k != 0 {
		return kindNames[k]
	}
	return "unknown"
}

// Event is one fact read from the record. File and Line are the evidence an audit record
// cites. Text is owned by the Event (copied out of the reader's buffer).
type Event struct {
	Kind      Kind
	SessionID string    // SessionKnown; else the session the event belongs to, if known
	Text      string    // UserMessage, AssistantText; at most MaxText bytes
	Truncated bool      // Text was cut at MaxText
	At        time.Time // the time the record gives; zero when it gives none
	File      string    // the record file
	Line      int64     // 1-based line number in File
	Seq       uint64    // Synced: the number of the Sync request answered
	// Turn names the user message a turn answers, where the record says it (OpenCode):
	// a UserMessage's own id, the answered one's for TurnStarted, AssistantText and
	// TurnEnded. "" where the record does not: a turn answers every prompt before it.
	Turn string
	// Dir is the working directory a SessionKnown's session says it runs in, where the
	// record says (Codex's session_meta cwd); "" where it does not.
	Dir string
}

// Spec says which runtime's record to find.
type Spec struct {
	Spawned   time.Time         // the runtime's spawn: its record is created at or after it
	Dir       string            // the runtime's working directory
	Home      string            // HOME of the CLI process
	Env       map[string]string // the CLI's own directory variables: CODEX_HOME, CLAUDE_CONFIG_DIR, ...
	SessionID string            // the session id named at launch or resumed; "" when unknown
	// Exclude holds records found to be another runtime's (two agents in one directory):
	// a search for the newest record passes them over.
	Exclude map[string]bool
}

// Format is one CLI's record: where it lives and how a line reads. Implementations are
// stateless values registered once; per-file state lives in the *State Parse gets.
type Format interface {
	// Name is the profile's `record:` value ("claude", "codex", ...).
	Name() string
	// Root is the CLI's own directory for s: Locate's result must lie under it
	// (symlinks resolved), or the follower refuses it with ErrOutside.
	Root(s Spec) string
	// Locate returns the path of this runtime's record, or ErrNotYet while no file
	// created at or after s.Spawned in s.Dir (or named by s.SessionID) exists.
	Locate(s Spec) (string, error)
	// Parse reads one complete line (without its newline) and appends the events it
	// carries to dst. It never panics; a line it does not understand is skipped (nil
	// error); ErrUnknownFormat only when the file as a whole is not this format (for
	// example a first line that is no known header).
	Parse(dst []Event, st *State, line []byte) ([]Event, error)
}

// Namer is a Format whose record files carry their session's id in their name (Codex's
// rollout-…-ID.jsonl, Claude Code's ID.jsonl, ...). A session id a file's content names
// is believed only when the file's name carries it: an agent can write any header into a
// file of its own, not make the CLI name a file for another session.
type Namer interface {
	Names(file, sessionID string) bool
}

// NamesSession reports whether f would name file for sessionID (true for a format whose
// files carry no id in their name: a database's rows).
func NamesSession(f Format, file, sessionID string) bool {
	n, ok := f.(Namer)
	return !ok || n.Names(file, sessionID)
}

// State is the per-file state a Format keeps between lines (the session id, whether a
// turn is open); the follower owns it and passes the same value for every line of a file.
type State struct {
	Line      int64 // number of the line being parsed (1-based)
	SessionID string
	InTurn    bool
	Any       map[string]string // format-specific small state; bounded by the Format
}

// Table is a Format whose record is rows of a database rather than lines of a file
// (OpenCode keeps its sessions in SQLite). Its Locate returns FILE#KEY: the database file
// and the key of this runtime's first rows in it (a session); Parse reads one row in the
// form its TableReader gives it. The follower reads the rows it has not seen whenever the
// database's files change.
type Table interface {
	OpenTable(s Spec, file, key string) (TableReader, error)
}

// TableReader reads one runtime's rows of a database record — those of key and of any
// later key the CLI moved on to for the same runtime — ; the follower owns it and calls
// Close.
type TableReader interface {
	// Rows calls fn, in order, for each row whose line number is greater than after,
	// with that number, the row's key and its text (valid during the call only); a row
	// longer than MaxLine is not read, and given with nil text.
	Rows(after int64, fn func(line int64, key string, text []byte) error) error
	Close() error
}

// Syncer is a Reader that reads its record to the end on request, without waiting for a
// file event: a write whose event came before it was visible (a database's commit), or
// was lost, is read now. Sync(n) returns at once; the reader answers with an Event of
// Kind Synced and Seq n (or a later request's number) after the events of that read.
// A reader that has not found its record yet answers at once.
type Syncer interface {
	Sync(n uint64)
}

// Reader follows one runtime's record. Events is closed when the reader ends; Err then
// says why (nil after Close; ErrUnknownFormat when the caller must degrade to the screen).
// Close is idempotent and waits for the reader's goroutine.
type Reader interface {
	Events() <-chan Event
	Path() string // the record file once found; "" before
	Err() error
	Close() error
}

var (
	regMu   sync.RWMutex
	formats = map[string]Format{}
)

// Register makes f available under f.Name(); a reader file calls it from init.
func Register(f Format) {
	regMu.Lock()
	defer regMu.Unlock()
	formats[f.Name()] = f
}

// Lookup returns the Format registered under name, or ErrUnknownReader.
func Lookup(name string) (Format, error) {
	regMu.RLock()
	defer regMu.RUnlock()
	if f, ok := formats[name]; ok {
		return f, nil
	}
	return nil, ErrUnknownReader
}

// Names lists the registered formats, sorted (for `nudge doctor` and profile validation).
func Names() []string {
	regMu.RLock()
	defer regMu.RUnlock()
	out := make([]string, 0, len(formats))
	for n := range formats {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// Clip cuts s to MaxText bytes on a rune boundary and says whether it cut.
func Clip(s string) (string, bool) {
	if len(s) <= MaxText {
		return s, false
	}
	i := MaxText
	for i > 0 && s[i]&0xC0 == 0x80 {
		i--
	}
	return s[:i], true
}
