package detector

import (
	"strings"

	"github.com/nudgehq/nudge/controlmode"
)

// The keys bound one by one where a bare send-keys does not repeat its key (tmux 3.2).
// Each binding is `send-keys KEY ; wait-for -S nudge-human`: send-keys with the key's own
// name sends the same key code the binding matched (both go through tmux's key-name
// lookup), so the pane receives exactly what was typed. The names are the ones list-keys
// prints (C-i is Tab, C-m is Enter, S-M- is M-S-), so a user's binding of a key is found
// under the name nudge would bind it by.

// eachKeys returns the key names to bind: printable ASCII, Space, the named keys, the
// control keys, each of those with Meta, and the cursor keys with their modifiers.
func eachKeys() []string {
	var printable []string
	for c := byte(0x21); c < 0x7f; c++ {
		printable = append(printable, string(c))
	}
	printable = append(printable, "Space")
	named := []string{"Enter", "Tab", "BTab", "BSpace", "Escape", "Up", "Down", "Left", "Right",
		"Home", "End", "PPage", "NPage", "IC", "DC",
		"F1", "F2", "F3", "F4", "F5", "F6", "F7", "F8", "F9", "F10", "F11", "F12"}
	keys := append(append([]string{}, printable...), named...)
	for c := 'a'; c <= 'z'; c++ {
		if c != 'i' && c != 'm' { // Tab and Enter
			keys = append(keys, "C-"+string(c))
		}
	}
	keys = append(keys, "C-Space", `C-\`, "C-]", "C-^", "C-_")
	for _, k := range append(printable, named...) {
		keys = append(keys, "M-"+k)
	}
	for _, m := range []string{"C-", "S-", "C-M-", "M-S-"} {
		for _, k := range []string{"Up", "Down", "Left", "Right", "Home", "End", "PPage", "NPage"} {
			keys = append(keys, m+k)
		}
	}
	return keys
}

// eachCommand is what the binding of key runs.
func eachCommand(key string) string {
	q, _ := controlmode.Quote(key) // key names are printable ASCII
	return "send-keys " + q + " ; wait-for -S " + HumanChannel
}

// argvKey writes key as one argument of a tmux command given as argv, where an argument
// ending in ';' separates commands unless the ';' is escaped.
func argvKey(key string) string {
	if strings.HasSuffix(key, ";") {
		return key[:len(key)-1] + `\;`
	}
	return key
}

// rootKeys parses `list-keys -T root` into key name -> whether the binding signals
// nudge's channel.
func rootKeys(out string) map[string]bool {
	keys := map[string]bool{}
	for _, l := range strings.Split(out, "\n") {
		f := strings.Fields(l)
		i := 0
		for i < len(f) && f[i] != "root" {
			i++
		}
		if i+1 >= len(f) {
			continue
		}
		keys[unescapeKey(f[i+1])] = strings.Contains(l, "wait-for -S "+HumanChannel)
	}
	return keys
}

// unescapeKey undoes the quoting list-keys applies to a key name: \X, 'X' or "X".
func unescapeKey(s string) string {
	if len(s) >= 2 && (s[0] == '\'' && s[len(s)-1] == '\'') {
		return s[1 : len(s)-1]
	}
	if len(s) >= 2 && s[0] == '"' && s[len(s)-1] == '"' {
		s = s[1 : len(s)-1]
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+1 < len(s) {
			i++
		}
		b.WriteByte(s[i])
	}
	return b.String()
}
