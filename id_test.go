package nudge

import (
	"errors"
	"regexp"
	"strings"
	"testing"
)

func TestValidID(t *testing.T) {
	tests := []struct {
		in   string
		want bool
	}{
		{"t1", true},
		{"trg_20250301T120000_abcdef", true},
		{"ws/agent:thread@host.x-1", true},
		{strings.Repeat("a", MaxIDLen), true},
		{strings.Repeat("a", MaxIDLen+1), false},
		{"", false},
		{"a b", false},
		{"a\nb", false},
		{"ü", false},
		{"a]b", false},
	}
	for i, tt := range tests {
		if got := ValidID(tt.in); got != tt.want {
			t.Errorf("#%d: ValidID(%q) = %v, want %v", i, tt.in, got, tt.want)
		}
	}
}

// TestIDCharset: IsIDByte, ValidID and the IDCharset class agree on every byte.
func TestIDCharset(t *testing.T) {
	re := regexp.MustCompile(`^[` + IDCharset + `]{1,128}$`)
	for c := 0; c < 256; c++ {
		s := string([]byte{byte(c)})
		if re.MatchString(s) != IsIDByte(byte(c)) || ValidID(s) != IsIDByte(byte(c)) {
			t.Errorf("byte %#x: class %v, IsIDByte %v, ValidID %v", c, re.MatchString(s), IsIDByte(byte(c)), ValidID(s))
		}
	}
}

func TestCheckID(t *testing.T) {
	if err := CheckID("trigger_id", "t1"); err != nil {
		t.Fatalf("valid id: %v", err)
	}
	var e *Error
	if err := CheckID("thread_id", "a b"); !errors.As(err, &e) || e.Code != BadRequest ||
		e.Message != "thread_id must match [A-Za-z0-9_.:@/-]{1,128}" {
		t.Fatalf("got %v", err)
	}
}
