package auth

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
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

// checkFieldsTokens is the json.Decoder-token walk checkFields replaced, kept as the
// oracle of TestCheckFieldsMatchesTokenWalk. It walks the next JSON value, refusing a key given twice in one object and,
// where the value is decoded into a struct, a key that is not exactly one of its field
// names. path names where the value is, for the error.
func checkFieldsTokens(dec *json.Decoder, t reflect.Type, path string) error {
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	tok, err := dec.Token()
	if err != nil {
		return fmt.Errorf("decode: %w", err)
	}
	switch tok {
	case json.Delim('{'):
		var fields map[string]reflect.Type
		var elem reflect.Type
		if t != nil && t.Kind() == reflect.Struct {
			fields = structFields(t)
		} else if t != nil && t.Kind() == reflect.Map {
			elem = t.Elem()
		}
		seen := map[string]bool{}
		for dec.More() {
			kt, err := dec.Token()
			if err != nil {
				return fmt.Errorf("decode: %w", err)
			}
			key, _ := kt.(string)
			name := path + key
			if seen[key] {
				return fmt.Errorf("%w: %q is given twice", ErrFieldName, name)
			}
			seen[key] = true
			ft := elem
			if fields != nil {
				var ok bool
				if ft, ok = fields[key]; !ok {
					for f := range fields {
						if strings.EqualFold(f, key) {
							return fmt.Errorf("%w: %q: field names are case-sensitive (want %q)", ErrFieldName, name, path+f)
						}
					}
					return fmt.Errorf("decode: json: unknown field %q", name)
				}
			}
			if err := checkFieldsTokens(dec, ft, name+"."); err != nil {
				return err
			}
		}
		_, err = dec.Token() // '}'
		return err
	case json.Delim('['):
		var elem reflect.Type
		if t != nil && (t.Kind() == reflect.Slice || t.Kind() == reflect.Array) {
			elem = t.Elem()
		}
		for dec.More() {
			if err := checkFieldsTokens(dec, elem, path); err != nil {
				return err
			}
		}
		_, err = dec.Token() // ']'
		return err
	}
	return nil
}

// TestCheckFieldsMatchesTokenWalk: the byte walker refuses exactly what the token walk
// it replaced refused, with the same message, on bodies with escapes, non-ASCII and
// broken UTF-8 in keys, nesting, arrays of objects and odd whitespace.
func TestCheckFieldsMatchesTokenWalk(t *testing.T) {
	type nested struct {
		Inner struct {
			Name string `json:"name"`
		} `json:"inner"`
		List []struct {
			A int `json:"a"`
		} `json:"list"`
		Env  map[string]string `json:"env"`
		Any  any               `json:"any"`
		Ptr  *struct{ X int }  `json:"ptr"`
		Text string            `json:"text"`
	}
	bodies := []string{
		`{}`, ` { } `, `{"text":"a"}`, `{"text":"a","text":"b"}`, `{"\u0074ext":"a","text":"b"}`,
		`{"te\u0078t":"a"}`, `{"TEXT":"a"}`, `{"t\u00e9xt":1}`, "{\"te\xffxt\":1}",
		"{\"env\":{\"a\xff\":\"1\",\"a\xfe\":\"2\"}}", `{"env":{"é":"1","\u00e9":"2"}}`,
		`{"inner":{"name":"x"},"list":[{"a":1},{"a":2,"a":3}]}`, `{"list":[{"A":1}]}`,
		`{"list":[{"a":1},{"b":2}]}`, `{"any":{"k":[1,{"k":1,"k":2}]}}`, `{"any":[[],{},[{}]]}`,
		`{"ptr":{"X":1,"x":2}}`, `{"ptr":null,"text":"a\"b\\","env":{}}`,
		"{\n\t\"text\" : \"a\" ,\r\n \"inner\" : { \"name\" : \"b\" } }",
		`{"text":"}{][,:\""}`, `{"env":{"k":"v","k":"w"}}`, `{"nope":1}`, `{"inner":{"nope":[1,2]}}`,
		`{"list":[1,"x",true,null,-1.5e3]}`, `{"text":"x","inner":{"name":"y","name":"z"}}`,
	}
	for _, b := range bodies {
		var raw json.RawMessage
		if err := json.Unmarshal([]byte(b), &raw); err != nil {
			t.Fatalf("%s: not JSON: %v", b, err)
		}
		typ := reflect.TypeOf(&nested{})
		want := checkFieldsTokens(json.NewDecoder(bytes.NewReader(raw)), typ, "")
		got := checkFields(raw, typ)
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("%s: byte walk %v, token walk %v", b, got, want)
		}
	}
}

// BenchmarkDecodeTrigger decodes a trigger request's body (allocations: -benchmem).
func BenchmarkDecodeTrigger(b *testing.B) {
	type request struct {
		TriggerID string `json:"trigger_id"`
		Workspace string `json:"workspace"`
		Agent     string `json:"agent"`
		ThreadID  string `json:"thread_id"`
		Reason    string `json:"reason"`
		Prompt    string `json:"prompt"`
		AckMS     int64  `json:"ack_timeout_ms"`
		Force     bool   `json:"force_override"`
	}
	body := `{"trigger_id":"bench-000001","workspace":"bench","agent":"a1","thread_id":"t1","reason":"bench","prompt":"` + strings.Repeat("p", 80) + `"}`
	b.ReportAllocs()
	for b.Loop() {
		var req request
		if err := DecodeJSON(strings.NewReader(body), &req); err != nil {
			b.Fatal(err)
		}
	}
}
