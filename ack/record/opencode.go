package record

import (
	"bytes"
	"database/sql"
	"encoding/json"
	"fmt"
	"net/url"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	_ "modernc.org/sqlite" // OpenCode's record is a SQLite database
)

// OpenCode is OpenCode's record (1.x): the SQLite database opencode.db in its data
// directory ($XDG_DATA_HOME/opencode, else ~/.local/share/opencode), shared by every
// session of the user. Its table `event` is the session's log: one row per change, in
// order (aggregate_id is the session id, seq counts from 0), each a type
// ("session.created.1", "message.updated.1", "message.part.updated.1", ...) and the JSON
// of the change. A runtime's session is the one created in its directory at or after
// its start (or the one it resumed), and any later one in that directory not another
// runtime's (its TUI may open a new one); a row reads as a line "TYPE DATA" (Parse), the
// table's rowid its line number. A prompt is a text part of the newest message with the
// role "user" (parts OpenCode adds itself are marked synthetic; a prompt queued while a
// turn runs has its message written at once); the answer is the text parts of the
// "assistant" messages that follow, each naming the user message it answers (parentID,
// Event.Turn); an assistant message completed with a finish other than "tool-calls" ends
// the turn.
type OpenCode struct{}

func init() { Register(OpenCode{}) }

// Name implements Format.
func (OpenCode) Name() string { return "opencode" }

// Root implements Format: OpenCode's data directory.
func (OpenCode) Root(s Spec) string {
	if d := s.Env["XDG_DATA_HOME"]; filepath.IsAbs(d) {
		return filepath.Join(d, "opencode")
	}
	return filepath.Join(s.Home, ".local", "share", "opencode")
}

func (o OpenCode) db(s Spec) string { return filepath.Join(o.Root(s), "opencode.db") }

// Locate implements Format: DB#SESSION, the database and this runtime's session in it.
func (o OpenCode) Locate(s Spec) (string, error) {
	path := o.db(s)
	db, err := openTable(path)
	if err != nil {
		return "", ErrNotYet // not created yet, or being created
	}
	defer db.Close()
	id, err := opencodeSession(db, s)
	if err != nil {
		return "", err
	}
	return path + "#" + id, nil
}

// opencodeSession finds s's session: the one named (resumed), else the first top-level
// session created in s.Dir at or after s.Spawned that is not another runtime's. Any
// error is ErrNotYet: OpenCode creates the database and then its tables.
func opencodeSession(db *sql.DB, s Spec) (string, error) {
	if s.SessionID != "" {
		var n int
		if err := db.QueryRow("SELECT count(*) FROM session WHERE id = ?", s.SessionID).Scan(&n); err != nil || n == 0 {
			return "", ErrNotYet
		}
		return s.SessionID, nil
	}
	rows, err := db.Query("SELECT id FROM session WHERE directory = ? AND time_created >= ? AND parent_id IS NULL AND octet_length(id) <= 256 ORDER BY time_created, id LIMIT 1024",
		s.Dir, s.Spawned.UnixMilli())
	if err != nil {
		return "", ErrNotYet
	}
	defer rows.Close()
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return "", ErrNotYet
		}
		if !excludedKey(s, id) {
			return id, nil
		}
	}
	return "", ErrNotYet
}

// opencodeErr maps a read's error: a database whose session has no event log (another
// version's layout) is a format this reader does not know; anything else (locked past
// the busy wait) is looked at again at the next change.
func opencodeErr(err error) error {
	if err != nil && strings.Contains(err.Error(), "no such") {
		return fmt.Errorf("%w: %v", ErrUnknownFormat, err)
	}
	return err
}

// excludedKey reports whether the session key of a database record is another
// runtime's (Exclude holds the Paths its readers reported: FILE#KEY).
func excludedKey(s Spec, key string) bool {
	for k := range s.Exclude {
		if _, kk, ok := splitKey(k); ok && kk == key {
			return true
		}
	}
	return false
}

// OpenTable implements Table: the rows of session key and of every later top-level
// session in the same directory that is not another runtime's (OpenCode's TUI may open a
// new session: the runtime's prompts go on there), in the order they were written (the
// event table's rowid, the line number).
func (OpenCode) OpenTable(s Spec, file, key string) (TableReader, error) {
	db, err := openTable(file)
	if err != nil {
		return nil, err
	}
	o := &opencodeRows{db: db, session: key, spec: s}
	if err := db.QueryRow("SELECT directory, time_created FROM session WHERE id = ? AND octet_length(directory) <= 4096", key).Scan(&o.dir, &o.since); err != nil {
		db.Close()
		return nil, opencodeErr(err)
	}
	return o, nil
}

type opencodeRows struct {
	db      *sql.DB
	session string // the first session
	dir     string // its directory
	since   int64  // and creation (ms)
	spec    Spec
}

// Rows implements TableReader.
func (o *opencodeRows) Rows(after int64, fn func(line int64, key string, text []byte) error) error {
	// A row's size is asked first (octet_length reads no content): one longer than a line
	// may be is not loaded at all, and is given to fn without its text (nil).
	rows, err := o.db.Query(`SELECT e.rowid, substr(e.aggregate_id, 1, 256), substr(e.type, 1, 256),
			CASE WHEN octet_length(e.data) <= ? THEN e.data END, octet_length(e.data) FROM event e
		WHERE e.rowid > ? AND e.aggregate_id IN (SELECT id FROM session
			WHERE id = ? OR (directory = ? AND parent_id IS NULL AND time_created >= ?))
		ORDER BY e.rowid`, MaxLine-256-1, after, o.session, o.dir, o.since)
	if err != nil {
		return opencodeErr(err)
	}
	defer rows.Close()
	var line []byte
	for rows.Next() {
		var n, size int64
		var key, typ string
		var data sql.RawBytes
		if err := rows.Scan(&n, &key, &typ, &data, &size); err != nil {
			return err
		}
		if key != o.session && excludedKey(o.spec, key) {
			continue
		}
		if data == nil && size > 0 {
			if err := fn(n, key, nil); err != nil {
				return err
			}
			continue
		}
		line = append(append(append(line[:0], typ...), ' '), data...)
		if err := fn(n, key, line); err != nil {
			return err
		}
	}
	return rows.Err()
}

func (o *opencodeRows) Close() error { return o.db.Close() }

// openTable opens a SQLite database read-only (never created, never written: OpenCode
// owns it), waiting briefly while its writer holds a lock; only a regular file, with
// regular companions (checkDatabase).
func openTable(path string) (*sql.DB, error) {
	if err := checkDatabase(path); err != nil {
		return nil, err
	}
	u := url.URL{Scheme: "file", Path: path, RawQuery: "mode=ro&_pragma=busy_timeout(2000)&_pragma=query_only(1)"}
	db, err := sql.Open("sqlite", u.String())
	if err != nil {
		return nil, err
	}
	db.SetMaxOpenConns(1)
	db.SetConnMaxIdleTime(time.Minute)
	if err := db.Ping(); err != nil {
		db.Close()
		return nil, err
	}
	return db, nil
}

// opencodeEvent is the part of an event row's data Parse reads.
type opencodeEvent struct {
	SessionID string `json:"sessionID"`
	Info      struct {
		ID       string `json:"id"`
		Role     string `json:"role"`
		ParentID string `json:"parentID"`
		Finish   string `json:"finish"`
		Error    any    `json:"error"`
		Time     struct {
			Created   int64 `json:"created"`
			Completed int64 `json:"completed"`
		} `json:"time"`
	} `json:"info"`
	Part struct {
		ID        string `json:"id"`
		MessageID string `json:"messageID"`
		Type      string `json:"type"`
		Text      string `json:"text"`
		Synthetic bool   `json:"synthetic"`
		Ignored   bool   `json:"ignored"`
		Time      struct {
			End int64 `json:"end"`
		} `json:"time"`
	} `json:"part"`
}

// OpenCode's state between rows (State.Any), bounded: the message being read of each
// role, and the last part and message already reported.
const (
	ocUser      = "user"      // id of the latest user message
	ocUserAt    = "user_at"   // and its creation time (ms)
	ocAssistant = "assistant" // id of the latest assistant message
	ocParent    = "parent"    // the user message it answers
	ocPart      = "part"      // id of the last part reported
	ocEnded     = "ended"     // id of the last assistant message that ended a turn
)

// Parse implements Format: one event row, "TYPE DATA".
func (OpenCode) Parse(dst []Event, st *State, line []byte) ([]Event, error) {
	typ, data, ok := bytes.Cut(line, []byte{' '})
	if !ok {
		return dst, nil
	}
	var e opencodeEvent
	if json.Unmarshal(data, &e) != nil {
		return dst, nil
	}
	if st.Any == nil {
		st.Any = map[string]string{}
	}
	n := len(dst)
	if e.SessionID != "" && (st.SessionID == "" || st.SessionID != e.SessionID && string(typ) == "session.created.1") {
		// The first session, or one the TUI opened since: the runtime's session now.
		st.SessionID = e.SessionID
		dst = append(dst, Event{Kind: SessionKnown, SessionID: e.SessionID})
	}
	switch string(typ) {
	case "message.updated.1":
		dst = opencodeMessage(dst, st, &e)
	case "message.part.updated.1":
		dst = opencodePart(dst, st, &e)
	}
	for i := n; i < len(dst); i++ {
		dst[i].Line = st.Line
	}
	return dst, nil
}

// opencodeMessage reads a message's (repeated) update: an assistant message starts the
// turn, and ends it once completed with a finish other than a tool call.
func opencodeMessage(dst []Event, st *State, e *opencodeEvent) []Event {
	m := &e.Info
	switch m.Role {
	case "user":
		// The newest message is the one whose parts are prompts: OpenCode updates an
		// older user message again (after its turn) while a newer one is being written.
		if at, _ := strconv.ParseInt(st.Any[ocUserAt], 10, 64); m.ID != "" && m.Time.Created >= at {
			st.Any[ocUser], st.Any[ocUserAt] = m.ID, strconv.FormatInt(m.Time.Created, 10)
		}
	case "assistant":
		if m.ID == "" {
			return dst
		}
		st.Any[ocAssistant], st.Any[ocParent] = m.ID, m.ParentID
		if !st.InTurn && st.Any[ocEnded] != m.ID {
			st.InTurn = true
			dst = append(dst, Event{Kind: TurnStarted, SessionID: st.SessionID, At: ms(m.Time.Created), Turn: m.ParentID})
		}
		if st.InTurn && m.Time.Completed != 0 && (m.Finish != "tool-calls" || m.Error != nil) {
			st.InTurn, st.Any[ocEnded] = false, m.ID
			dst = append(dst, Event{Kind: TurnEnded, SessionID: st.SessionID, At: ms(m.Time.Completed), Turn: m.ParentID})
		}
	}
	return dst
}

// opencodePart reads a part's update: a user message's own text is the prompt; an
// assistant's text counts once it is whole (its end time set). Each part once, a user's
// again when its text changed.
func opencodePart(dst []Event, st *State, e *opencodeEvent) []Event {
	p := &e.Part
	if p.Type != "text" || p.Synthetic || p.Ignored || p.ID == "" || p.MessageID == "" {
		return dst
	}
	// A part is reported once; a user's part again when its text changed: OpenCode
	// appends a prompt typed while the previous one waits to be sent to that one's text.
	seen := p.ID + "\x00" + strconv.Itoa(len(p.Text))
	var k Kind
	turn := p.MessageID
	switch p.MessageID {
	case st.Any[ocUser]:
		k = UserMessage
	case st.Any[ocAssistant]:
		if p.Time.End == 0 || !st.InTurn {
			return dst
		}
		k, seen, turn = AssistantText, p.ID, st.Any[ocParent]
	default:
		return dst
	}
	if seen == st.Any[ocPart] {
		return dst
	}
	st.Any[ocPart] = seen
	text, cut := Clip(p.Text)
	return append(dst, Event{Kind: k, SessionID: st.SessionID, Text: text, Truncated: cut, Turn: turn})
}

func ms(v int64) time.Time {
	if v <= 0 {
		return time.Time{}
	}
	return time.UnixMilli(v)
}

// splitKey splits a database record's path FILE#KEY.
func splitKey(p string) (file, key string, ok bool) {
	i := len(p) - 1
	for i >= 0 && p[i] != '#' && p[i] != filepath.Separator {
		i--
	}
	if i < 0 || p[i] != '#' {
		return p, "", false
	}
	return p[:i], p[i+1:], true
}
