package mcp

import (
	"context"
	"strings"
	"testing"
)

type closeBuf struct{ strings.Builder }

func (*closeBuf) Close() error { return nil }

// TestStdioTransportAnswersBeforeEOF: requests that arrive with the end of input are all
// answered before the server returns (the SDK alone drops what is not answered yet).
func TestStdioTransportAnswersBeforeEOF(t *testing.T) {
	in := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}` + "\n" +
		`{"jsonrpc":"2.0","method":"notifications/initialized"}` + "\n" +
		`{"jsonrpc":"2.0","id":2,"method":"tools/list"}` + "\n" +
		`{"jsonrpc":"2.0","id":"p","method":"ping"}` + "\n"
	var out closeBuf
	if err := NewServer(nil, "t").Run(context.Background(), StdioTransport(strings.NewReader(in), &out)); err != nil {
		t.Logf("run: %v", err)
	}
	got := out.String()
	for _, want := range []string{`"id":1,"result":{"capabilities"`, `"id":2,"result":{`, `"name":"list_runtimes"`, `"id":"p","result":{}`} {
		if !strings.Contains(got, want) {
			t.Errorf("no %s in the output (%d bytes, ending %q)", want, len(got), got[max(0, len(got)-200):])
		}
	}
}

func TestDrainIDs(t *testing.T) {
	if got := requestIDs([]byte(`[{"id":1,"method":"a"},{"method":"n"},{"id":"x","method":"b"},{"id":null,"method":"c"}]`)); strings.Join(got, ",") != `1,"x"` {
		t.Errorf("batch ids %q", got)
	}
	if id, ok := responseID([]byte(`{"jsonrpc":"2.0","id":1.0,"result":{}}`)); !ok || id != "1" {
		t.Errorf("response id %q %v", id, ok)
	}
	if _, ok := responseID([]byte(`{"id":3,"method":"server/asks"}`)); ok {
		t.Error("a request taken for a response")
	}
	var lines []string
	var b lineBuf
	b.feed([]byte("ab"), func(l []byte) { lines = append(lines, string(l)) })
	b.feed([]byte("c\nd\n\ne"), func(l []byte) { lines = append(lines, string(l)) })
	if strings.Join(lines, "|") != "abc|d|" {
		t.Errorf("lines %q", lines)
	}
}
