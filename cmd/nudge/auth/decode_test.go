package auth

import (
	"errors"
	"strings"
	"testing"
)

type decodeBody struct {
	Prompt string            `json:"prompt"`
	Argv   []string          `json:"argv"`
	Env    map[string]string `json:"env"`
	Inner  struct {
		Name string `json:"name"`
	} `json:"inner"`
	Server string `json:"-"`
}

// Duplicate keys and case-folded field names are refused with the field named;
// encoding/json alone takes the last duplicate and matches names case-insensitively.
func TestDecodeJSONFieldNames(t *testing.T) {
	for _, c := range []struct{ body, want string }{
		{`{"prompt":"a","prompt":"b"}`, `"prompt" is given twice`},
		{`{"Prompt":"a"}`, `"Prompt": field names are case-sensitive (want "prompt")`},
		{`{"PROMPT":"a"}`, `"PROMPT": field names are case-sensitive`},
		{`{"inner":{"name":"a","NAME":"b"}}`, `"inner.NAME": field names are case-sensitive`},
		{`{"inner":{"name":"a","name":"b"}}`, `"inner.name" is given twice`},
		{`{"env":{"K":"a","K":"b"}}`, `"env.K" is given twice`},
		{`{"server":"x"}`, `unknown field "server"`},
		{`{"Server":"x"}`, `unknown field "Server"`},
		{`{"nope":1}`, `unknown field "nope"`},
	} {
		var v decodeBody
		err := DecodeJSON(strings.NewReader(c.body), &v)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an error with %s", c.body, err, c.want)
		}
	}
	var v decodeBody
	if err := DecodeJSON(strings.NewReader(`{"prompt":"p","argv":["a","a"],"env":{"K":"a","k":"b"},"inner":{"name":"n"}}`), &v); err != nil ||
		v.Prompt != "p" || len(v.Argv) != 2 || v.Env["k"] != "b" || v.Inner.Name != "n" {
		t.Fatalf("a good body: %+v %v", v, err)
	}
	if err := DecodeJSON(strings.NewReader(`{"prompt":"a","Prompt":"b"}`), &v); !errors.Is(err, ErrFieldName) {
		t.Fatalf("want ErrFieldName: %v", err)
	}
}
