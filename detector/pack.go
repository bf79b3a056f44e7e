package detector

import (
	"bytes"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/nudgehq/nudge"
)

//go:embed packs/*.json
var embeddedPacks embed.FS

// DefaultPromptRegion is the prompt region size used when a pack leaves it zero.
const DefaultPromptRegion = 10

// Pack holds one CLI's readiness cues as data. Every pattern is a Go regexp
// matched against one ANSI-stripped screen line (trailing spaces removed).
// A Pack is immutable once loaded and safe for concurrent use.
type Pack struct {
	// Name is the pack's name, the file name without ".json".
	Name string `json:"name"`
	// Description is free text for humans.
	Description string `json:"description,omitempty"`
	// PromptRegion is how many non-blank lines at the bottom of the screen
	// are classified (blank rows between them do not count: TUIs with an
	// inline viewport leave gaps). Zero means DefaultPromptRegion.
	PromptRegion int `json:"prompt_region,omitempty"`
	// ComposerAlwaysShown is true for TUIs that draw their composer even while
	// they work (Codex, Claude Code, Gemini CLI): a busy cue anywhere in the
	// region then beats the composer, and an error that is the newest history
	// entry right above the composer means ERROR.
	ComposerAlwaysShown bool `json:"composer_always_shown,omitempty"`
	// NoPromptMeansBusy is true for shells: no prompt on the cursor line means
	// a foreground program runs (BUSY, not confident).
	NoPromptMeansBusy bool `json:"no_prompt_means_busy,omitempty"`
	// IntakeNeedsTurn is true for TUIs that may draw something after a prompt left their
	// composer and only start its turn seconds later (Gemini CLI, given a large paste):
	// their drawing does not show that they took the prompt. The intake of a prompt nudge
	// submitted then ends only on a sign of its turn: a busy verdict (not its own queue's
	// line), a dialog or an error, the prompt in the transcript, the turn's end in the
	// agent's record or another ack, or the intake window.
	IntakeNeedsTurn bool `json:"intake_needs_turn,omitempty"`

	// Ready, Busy, Confirm and Error are the state cues (see Cue: a cue may be scoped
	// to the TUI's chrome, so that the agent's prose never reads as a status line).
	Ready   []Cue `json:"ready,omitempty"`
	Busy    []Cue `json:"busy,omitempty"`
	Confirm []Cue `json:"needs_confirmation,omitempty"`
	Error   []Cue `json:"error,omitempty"`
	// TurnDone lists the TUI's turn-finished markers (Codex's "─ Worked for 42s ─"):
	// a busy, error or confirmation line above the bottom-most one belongs to a turn
	// that is over and decides nothing.
	TurnDone []Cue `json:"turn_done,omitempty"`
	// Queued lists the lines a TUI shows while typed input waits in its own queue
	// (Claude Code's "Press up to edit queued messages", Gemini CLI's "Queued (press ↑
	// to edit):", Codex's "• Queued follow-up inputs").
	Queued []Cue `json:"queued,omitempty"`
	// Ignore lists lines that are never a cue (e.g. Codex's "■ Conversation
	// interrupted", which looks like an error banner but is not one).
	Ignore []string `json:"ignore,omitempty"`

	Composer Composer  `json:"composer"`
	Examples []Example `json:"examples,omitempty"`
	// Dialog reads the TUI's approval dialog as data (ParseDialog); nil: none known.
	Dialog *DialogSpec `json:"dialog,omitempty"`

	// Source is the file the pack was read from; "" = the embedded default.
	Source string `json:"-"`

	ignore []*regexp.Regexp
}

// Composer says where a CLI's input line is and what its placeholder looks like.
type Composer struct {
	// Prompt matches the start of the composer line up to where input begins
	// (e.g. "^› ?" for Codex). Its match on a line is also a READY cue.
	Prompt string `json:"prompt"`
	// CursorLineOnly restricts the composer to the cursor line (shells);
	// otherwise it is the bottom-most line of the region that matches Prompt.
	CursorLineOnly bool `json:"cursor_line_only,omitempty"`
	// Trailer is removed from the end of the input text (e.g. a box border).
	Trailer string `json:"trailer,omitempty"`
	// Continuation matches a wrapped line of a multi-line draft right below the
	// composer line; its first group is the text. Empty: drafts are one line.
	Continuation string `json:"continuation,omitempty"`
	// Placeholder lists regexps for the whole placeholder text, used when the
	// capture carries no attributes (plain capture-pane -p).
	Placeholder []string `json:"placeholder,omitempty"`
	// PlaceholderStyle lists SGR styles of placeholder text in a -e capture:
	// "dim", or "fg:<params>" such as "fg:90" or "fg:38;5;244".
	PlaceholderStyle []string `json:"placeholder_style,omitempty"`
	// Above, if set, matches a line drawn right under the input box (OpenCode's agent
	// and model line, Pi's bottom rule). The composer is then found from the
	// bottom-most such line instead of the bottom of the region: the top-most Prompt
	// line of the run that ends one or two lines above it and holds no Above line
	// (history drawn in the same style further up is not the composer). No Prompt
	// line there: the composer is empty.
	Above string `json:"above,omitempty"`
	// Folded lists regexps for the placeholder the CLI shows instead of a large paste
	// (Codex's "[Pasted Content 4096 chars]", Claude Code's "[Pasted text #1 +40
	// lines]"). A named group "chars" or "lines" gives the folded text's size, so the
	// composer can be matched against what nudge typed (see Pack.Ours).
	Folded []string `json:"folded,omitempty"`

	prompt, trailer, continuation, above *regexp.Regexp
	placeholder, folded                  []*regexp.Regexp
}

// Example is one few-shot example for the LLM classifier.
type Example struct {
	Screen        string          `json:"screen"`
	State         nudge.Readiness `json:"state"`
	Summary       string          `json:"summary"`
	ActionsNeeded []string        `json:"actions_needed,omitempty"`
}

// ParsePack decodes and compiles one pack. Unknown fields, bad regexps, an
// unknown example state or a pack without any cue are errors.
func ParsePack(name string, data []byte) (*Pack, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	p := &Pack{}
	if err := dec.Decode(p); err != nil {
		return nil, fmt.Errorf("decode: %w", err)
	}
	if dec.More() {
		return nil, errors.New("decode: trailing data after the pack object")
	}
	if p.Name == "" {
		p.Name = name
	}
	if err := p.compile(); err != nil {
		return nil, err
	}
	return p, nil
}

func (p *Pack) compile() error {
	var err error
	if p.Dialog != nil {
		if err := p.Dialog.compile(); err != nil {
			return fmt.Errorf("dialog: %w", err)
		}
	}
	for _, l := range []struct {
		field string
		cues  []Cue
	}{{"ready", p.Ready}, {"busy", p.Busy}, {"needs_confirmation", p.Confirm},
		{"error", p.Error}, {"turn_done", p.TurnDone}, {"queued", p.Queued}} {
		if err := compileCues(l.field, l.cues); err != nil {
			return err
		}
	}
	lists := []struct {
		field string
		src   []string
		dst   *[]*regexp.Regexp
	}{
		{"ignore", p.Ignore, &p.ignore},
		{"composer.placeholder", p.Composer.Placeholder, &p.Composer.placeholder},
		{"composer.folded", p.Composer.Folded, &p.Composer.folded},
	}
	for _, l := range lists {
		if *l.dst, err = compileAll(l.field, l.src); err != nil {
			return err
		}
	}
	c := &p.Composer
	for _, o := range []struct {
		field string
		src   string
		dst   **regexp.Regexp
	}{{"composer.prompt", c.Prompt, &c.prompt}, {"composer.trailer", c.Trailer, &c.trailer},
		{"composer.continuation", c.Continuation, &c.continuation}, {"composer.above", c.Above, &c.above}} {
		if o.src == "" {
			continue
		}
		if *o.dst, err = compileOne(o.field, o.src); err != nil {
			return err
		}
	}
	return p.validate()
}

func (p *Pack) validate() error {
	if p.PromptRegion < 0 {
		return fmt.Errorf("prompt_region %d is negative", p.PromptRegion)
	}
	if len(p.Ready)+len(p.Busy)+len(p.Confirm)+len(p.Error) == 0 && p.Composer.prompt == nil {
		return errors.New("pack has no cues")
	}
	for _, s := range p.Composer.PlaceholderStyle {
		if s != "dim" && !strings.HasPrefix(s, "fg:") {
			return fmt.Errorf("composer.placeholder_style %q: want \"dim\" or \"fg:<params>\"", s)
		}
	}
	for i, ex := range p.Examples {
		if !validState(ex.State) {
			return fmt.Errorf("examples[%d]: unknown state %q", i, ex.State)
		}
	}
	return nil
}

func compileOne(field, src string) (*regexp.Regexp, error) {
	re, err := regexp.Compile(src)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", field, err)
	}
	return re, nil
}

func compileAll(field string, src []string) ([]*regexp.Regexp, error) {
	out := make([]*regexp.Regexp, 0, len(src))
	for i, s := range src {
		re, err := compileOne(fmt.Sprintf("%s[%d]", field, i), s)
		if err != nil {
			return nil, err
		}
		out = append(out, re)
	}
	return out, nil
}

func (p *Pack) region() int {
	if p.PromptRegion == 0 {
		return DefaultPromptRegion
	}
	return p.PromptRegion
}

// LoadPacks returns the embedded default packs, each replaced by the file of
// the same name in userDir (e.g. userDir/codex.json) when there is one; other
// *.json files in userDir add packs. userDir "" or a missing directory means
// defaults only. An error names the offending file or directory.
func LoadPacks(userDir string) (map[string]*Pack, error) {
	packs := map[string]*Pack{}
	if err := loadFS(packs, embeddedPacks, "packs", ""); err != nil {
		return nil, err
	}
	if userDir == "" {
		return packs, nil
	}
	fi, err := os.Stat(userDir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return packs, nil
	case err != nil:
		return nil, fmt.Errorf("load packs: %w", err)
	case !fi.IsDir():
		return nil, fmt.Errorf("load packs: %s is not a directory", userDir)
	}
	if err := loadFS(packs, os.DirFS(userDir), ".", userDir); err != nil {
		return nil, err
	}
	return packs, nil
}

// loadFS reads dir/*.json of fsys into packs. src is the directory's path on
// disk ("" for the embedded packs): it goes into errors and Pack.Source.
func loadFS(packs map[string]*Pack, fsys fs.FS, dir, src string) error {
	label := func(name string) string {
		if src == "" {
			return "embedded " + name
		}
		return filepath.Join(src, name)
	}
	entries, err := fs.ReadDir(fsys, dir) // unlike fs.Glob, reports an unreadable directory
	if err != nil {
		return fmt.Errorf("load packs %s: %w", label(""), err)
	}
	for _, e := range entries { // ReadDir sorts by name
		n := e.Name()
		if e.IsDir() || filepath.Ext(n) != ".json" {
			continue
		}
		data, err := fs.ReadFile(fsys, pathJoin(dir, n))
		if err != nil {
			return fmt.Errorf("load pack %s: %w", label(n), err)
		}
		p, err := ParsePack(strings.TrimSuffix(n, ".json"), data)
		if err != nil {
			return fmt.Errorf("load pack %s: %w", label(n), err)
		}
		if src != "" {
			p.Source = label(n)
		}
		packs[strings.TrimSuffix(n, ".json")] = p
	}
	return nil
}

func pathJoin(dir, name string) string {
	if dir == "." {
		return name
	}
	return dir + "/" + name
}

func validState(s nudge.Readiness) bool {
	switch s {
	case nudge.Ready, nudge.Busy, nudge.NeedsConfirmation, nudge.ErrorState:
		return true
	}
	return false
}
