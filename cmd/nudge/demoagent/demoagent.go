// Package demoagent is the demo agent: a small stand-in for an AI coding agent that
// `nudge spawn --agent demo` runs (as `nudge demo-agent`, so nothing else needs
// installing) to show the whole loop of a trigger without a real AI CLI.
//
// It draws a composer (`› `), takes a prompt (a line, or an envelope typed over several
// lines), shows that it works for a moment (a spinner line the demo pack reads as BUSY),
// writes its session record (record.Demo: `.nudge-demo/<session id>.jsonl` in its working
// directory, which nudge reads for the ack and the reply) and prints its reply. A prompt
// with the word "ask" in it raises an approval dialog first (NEEDS_CONFIRMATION; `nudge
// approve` or `nudge deny` answers it, or a key typed by hand).
//
// Run is the whole program; Main wires it to the process's terminal.
package demoagent

import (
	"bufio"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"golang.org/x/term"
)

// RecordDir is the folder, in the demo's working directory, its session records go to.
const RecordDir = ".nudge-demo"

// maxPrompt bounds one prompt the demo reads (a longer one is cut).
const maxPrompt = 64 << 10

// Config is one run of the demo agent.
type Config struct {
	SessionID string        // "" = a fresh random id
	Dir       string        // where RecordDir is made; "" = the working directory
	Work      time.Duration // how long it "works" on a prompt; 0 = 1.5s
	In        io.Reader
	Out       io.Writer
	// ReadKey reads one key press for the dialog (the terminal in raw mode); nil reads a
	// line from In and takes its first byte.
	ReadKey func() (byte, error)
}

// Main runs the demo agent on the process's terminal with args (--session-id ID,
// --work DURATION) and returns its exit status.
func Main(args []string) int {
	cfg := Config{In: os.Stdin, Out: os.Stdout}
	for i := 0; i < len(args); i++ {
		switch {
		case args[i] == "--session-id" && i+1 < len(args):
			i++
			cfg.SessionID = args[i]
		case args[i] == "--work" && i+1 < len(args):
			i++
			d, err := time.ParseDuration(args[i])
			if err != nil {
				fmt.Fprintln(os.Stderr, "demo-agent: --work:", err)
				return 2
			}
			cfg.Work = d
		default:
			fmt.Fprintf(os.Stderr, "demo-agent: unknown argument %q (want --session-id ID, --work DURATION)\n", args[i])
			return 2
		}
	}
	fd := int(os.Stdin.Fd())
	if term.IsTerminal(fd) {
		cfg.ReadKey = func() (byte, error) {
			st, err := term.MakeRaw(fd)
			if err != nil {
				return 0, err
			}
			defer term.Restore(fd, st) //nolint:errcheck // best effort: the terminal as it was
			var b [1]byte
			_, err = os.Stdin.Read(b[:])
			return b[0], err
		}
	}
	if err := Run(cfg); err != nil && !errors.Is(err, io.EOF) {
		fmt.Fprintln(os.Stderr, "demo-agent:", err)
		return 1
	}
	return 0
}

// agent is one run's state.
type agent struct {
	cfg Config
	in  *bufio.Reader
	rec *os.File
}

// Run runs the demo agent until its input ends (io.EOF).
func Run(cfg Config) error {
	if cfg.SessionID == "" {
		var b [8]byte
		rand.Read(b[:]) //nolint:errcheck // never fails
		cfg.SessionID = hex.EncodeToString(b[:])
	}
	if !validID.MatchString(cfg.SessionID) {
		return fmt.Errorf("session id %q: want letters, digits, - and _", cfg.SessionID)
	}
	if cfg.Work <= 0 {
		cfg.Work = 1500 * time.Millisecond
	}
	dir := filepath.Join(cfg.Dir, RecordDir)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	f, err := os.OpenFile(filepath.Join(dir, cfg.SessionID+".jsonl"), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	defer f.Close()
	a := &agent{cfg: cfg, in: bufio.NewReader(cfg.In), rec: f}
	if cfg.ReadKey == nil {
		a.cfg.ReadKey = a.lineKey
	}
	a.write(map[string]any{"type": "session", "id": cfg.SessionID})
	fmt.Fprintf(cfg.Out, "nudge demo agent (session %s): a stand-in for an AI coding agent.\n", cfg.SessionID)
	fmt.Fprintln(cfg.Out, "Type a prompt and press Enter; a prompt with the word \"ask\" in it raises a dialog.")
	for {
		fmt.Fprint(cfg.Out, "\n› ")
		prompt, err := a.readPrompt()
		if err != nil {
			return err
		}
		if strings.TrimSpace(prompt) == "" {
			continue
		}
		if err := a.turn(prompt); err != nil {
			return err
		}
	}
}

var (
	validID  = regexp.MustCompile(`^[A-Za-z0-9_-]{1,128}$`)
	askWord  = regexp.MustCompile(`(?i)\bask\b`)
	idField  = regexp.MustCompile(`\[BRIDGE_TRIGGER id=([A-Za-z0-9_.:@/-]+)`)
	envelope = regexp.MustCompile(`(?s)^\[BRIDGE_TRIGGER [^\]]*\]\s*(.*?)\s*(?:\(When you have read this[^)]*\))?\s*\[/BRIDGE_TRIGGER\]$`)
)

// readPrompt reads one prompt: a line, or the lines of an envelope up to its footer.
func (a *agent) readPrompt() (string, error) {
	line, err := a.readLine()
	if err != nil {
		return "", err
	}
	if !strings.HasPrefix(strings.TrimSpace(line), "[BRIDGE_TRIGGER ") || strings.Contains(line, "[/BRIDGE_TRIGGER]") {
		return line, nil
	}
	var b strings.Builder
	b.WriteString(line)
	for b.Len() < maxPrompt {
		next, err := a.readLine()
		if err != nil {
			return "", err
		}
		b.WriteString("\n" + next)
		if strings.Contains(next, "[/BRIDGE_TRIGGER]") {
			break
		}
	}
	return b.String(), nil
}

// readLine reads one line (without its end), at most maxPrompt bytes of it kept; a
// bracketed paste's markers are dropped.
func (a *agent) readLine() (string, error) {
	var b []byte
	for {
		chunk, more, err := a.in.ReadLine()
		if err != nil {
			return "", err
		}
		if len(b) < maxPrompt {
			b = append(b, chunk[:min(len(chunk), maxPrompt-len(b))]...)
		}
		if !more {
			break
		}
	}
	s := strings.NewReplacer("\x1b[200~", "", "\x1b[201~", "").Replace(string(b))
	return strings.TrimRight(s, "\r"), nil
}

// lineKey is ReadKey without a terminal: the first byte of the next line.
func (a *agent) lineKey() (byte, error) {
	l, err := a.readLine()
	if err != nil {
		return 0, err
	}
	if l == "" {
		return '\r', nil
	}
	return l[0], nil
}

// turn takes one prompt: a dialog first if it asks for one (drawn before the record shows
// the prompt, so that the dialog is up once the prompt is acked), the record's user line,
// the work, and the reply on screen and in the record.
func (a *agent) turn(prompt string) error {
	body := prompt
	if m := envelope.FindStringSubmatch(prompt); m != nil {
		body = m[1]
	}
	ask := askWord.MatchString(body)
	if ask {
		a.showDialog()
	}
	a.write(map[string]any{"type": "user", "text": prompt, "at": time.Now().UTC().Format(time.RFC3339Nano)})
	a.write(map[string]any{"type": "turn_started"})
	if m := idField.FindStringSubmatch(prompt); m != nil && strings.Contains(prompt, "nudge ack ") {
		// The envelope asks for the ack marker (nudge did not read the record yet).
		fmt.Fprintf(a.cfg.Out, "ACK_TRIGGER:%s\n", m[1])
	}
	reply := fmt.Sprintf("Done. You said: %q. (This is the demo agent: it read your prompt, worked for %s and changed nothing.)",
		clip(body, 200), a.cfg.Work)
	if ask {
		approved, err := a.answer()
		if err != nil {
			return err
		}
		if approved {
			reply = fmt.Sprintf("Approved: I would now run `touch demo.txt` (a demo: nothing ran). You said: %q.", clip(body, 200))
		} else {
			reply = fmt.Sprintf("Denied: I left everything as it was. You said: %q.", clip(body, 200))
		}
	}
	a.work()
	fmt.Fprintf(a.cfg.Out, "● %s\n", reply)
	a.write(map[string]any{"type": "assistant", "text": reply})
	a.write(map[string]any{"type": "turn_ended"})
	return nil
}

// work shows the spinner line for cfg.Work.
func (a *agent) work() {
	frames := []rune("⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏")
	start := time.Now()
	for i := 0; time.Since(start) < a.cfg.Work; i++ {
		fmt.Fprintf(a.cfg.Out, "\r%c working… (%ds)", frames[i%len(frames)], int(time.Since(start).Seconds()))
		time.Sleep(100 * time.Millisecond)
	}
	fmt.Fprint(a.cfg.Out, "\r\x1b[2K")
}

// showDialog draws the approval dialog.
func (a *agent) showDialog() {
	fmt.Fprint(a.cfg.Out, "Do you want to run this command?\n  $ touch demo.txt\n› 1. Yes\n  2. No\nPress 1 or 2 (Esc to cancel)")
}

// answer reads the dialog's answer: 1 (or y) yes, 2 (or n, Esc, C-c) no.
func (a *agent) answer() (bool, error) {
	for {
		k, err := a.cfg.ReadKey()
		if err != nil {
			return false, err
		}
		switch k {
		case '1', 'y', 'Y':
			fmt.Fprint(a.cfg.Out, "\r\x1b[2K1\n")
			return true, nil
		case '2', 'n', 'N', 0x1b, 3:
			fmt.Fprint(a.cfg.Out, "\r\x1b[2K2\n")
			return false, nil
		}
	}
}

// write appends one record line (best effort: the screen is the demo's first output).
func (a *agent) write(v map[string]any) {
	b, _ := json.Marshal(v)
	a.rec.Write(append(b, '\n')) //nolint:errcheck // best effort
}

func clip(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}
