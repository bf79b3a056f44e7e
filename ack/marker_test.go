package ack

import (
	"reflect"
	"strings"
	"testing"
)

// feed runs chunks through a fresh Matcher, then Flush, and returns the ids found.
func feed(chunks ...string) []string {
	var m Matcher
	var ids []string
	found := func(id []byte) { ids = append(ids, string(id)) }
	for _, c := range chunks {
		m.Feed([]byte(c), found)
	}
	m.Flush(found)
	return ids
}

func TestMatcher(t *testing.T) {
	tests := []struct {
		chunks []string
		want   []string
	}{
		{[]string{"ok ACK_TRIGGER:t-1\n"}, []string{"t-1"}},
		{[]string{"ACK_TRI", "GGER:", "abc\r\n"}, []string{"abc"}},
		{[]string{"ACK_\x1b[1mTRIG", "GER:\x1b[0mid9 "}, []string{"id9"}},
		{[]string{"\x1b]0;ACK_TRIGGER:title\x07"}, nil}, // inside an OSC string: not text
		{[]string{"ACK_TRIGGER:a.b:c."}, []string{"a.b:c"}},
		{[]string{"ACK_TRIGGER: x"}, nil},
		{[]string{"ack_trigger:x ACK_TRIGGER x"}, nil},
		{[]string{"AACK_TRIGGER:x ACK_TRIGGER:y\n"}, []string{"x", "y"}},
		{[]string{"ACK_TRIGGER:" + strings.Repeat("z", MaxIDLen) + " "}, []string{strings.Repeat("z", MaxIDLen)}},
		{[]string{"ACK_TRIGGER:" + strings.Repeat("z", MaxIDLen+1) + " ACK_TRIGGER:ok "}, []string{"ok"}},
		{[]string{"ACK_TRIGGER:ab", "cd"}, []string{"abcd"}}, // the id continues in the next chunk
	}
	for i, tt := range tests {
		if got := feed(tt.chunks...); !reflect.DeepEqual(got, tt.want) {
			t.Errorf("#%d: feed(%q) = %q, want %q", i, tt.chunks, got, tt.want)
		}
	}
}

func TestMatcherWaitsForIDEnd(t *testing.T) {
	var m Matcher
	var ids []string
	found := func(id []byte) { ids = append(ids, string(id)) }
	m.Feed([]byte("ACK_TRIGGER:ab"), found)
	if ids != nil {
		t.Fatalf("reported %q before the id ended", ids)
	}
	m.Flush(found)
	if !reflect.DeepEqual(ids, []string{"ab"}) {
		t.Fatalf("after Flush: %q", ids)
	}
}

func TestMatcherNoAlloc(t *testing.T) {
	chunk := []byte(strings.Repeat("some output \x1b[1mACK_TRIGGER:t-42\x1b[0m\r\n", 50))
	var m Matcher
	n := 0
	found := func(id []byte) { n++ }
	if a := testing.AllocsPerRun(100, func() { m.Feed(chunk, found) }); a != 0 {
		t.Errorf("Feed: %v allocs, want 0", a)
	}
	if n == 0 {
		t.Errorf("no ids found")
	}
}
