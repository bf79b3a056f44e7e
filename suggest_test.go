package nudge

import "testing"

func TestSuggest(t *testing.T) {
	profiles := []string{"claude", "codex", "demo", "gemini", "opencode", "pi", "shell"}
	ids := []string{"rt_mobile_core.reviewer", "rt_mobile_core.executioner", "rt_web.reviewer"}
	for i, tt := range []struct {
		word  string
		among []string
		want  string
	}{
		{"codx", profiles, " (did you mean codex?)"},
		{"cladue", profiles, " (did you mean claude?)"},
		{"shel", profiles, " (did you mean shell?)"},
		{"codex", profiles, ""},
		{"zzzzzz", profiles, ""},
		{"rt_mobile_core.reveiwer", ids, " (did you mean rt_mobile_core.reviewer?)"},
		{"rt_mobile_core.reviewr", ids, " (did you mean rt_mobile_core.reviewer?)"},
		{"rt_web.reviewer", ids, ""},
		{"rt_mobilecore.reviewer", ids, " (did you mean rt_mobile_core.reviewer?)"},
		{"rt_b.y", []string{"rt_a.x"}, ""}, // two edits in a short id: another id, not a typo
		{"pi", profiles, ""},
		{"p", profiles, " (did you mean pi?)"},
	} {
		if got := Suggest(tt.word, tt.among); got != tt.want {
			t.Errorf("#%d %q: got %q, want %q", i, tt.word, got, tt.want)
		}
	}
}
