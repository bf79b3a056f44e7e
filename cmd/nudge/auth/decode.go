package auth

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strings"
)

// Errors DecodeJSON returns besides wrapped JSON and read errors.
var (
	ErrNotObject = errors.New("want a JSON object")
	ErrTrailing  = errors.New("trailing data after the JSON object")
	// ErrFieldName: a field given twice, or spelled in another case than the API's
	// (encoding/json would take "Prompt" or "PROMPT" for "prompt", and the last of two
	// "prompt"s): two readers of the same body (a proxy, an audit, nudge) could see two
	// different requests.
	ErrFieldName = errors.New("bad field")
)

// DecodeJSON reads exactly one JSON object from r into v: anything but an object (null
// included), unknown fields, duplicate fields, field names in another case than v's
// and trailing data are errors. Bound r (http.MaxBytesReader) before calling; a read
// error from r is returned wrapped, so errors.As finds it.
func DecodeJSON(r io.Reader, v any) error {
	br := bufio.NewReader(r)
	for {
		b, err := br.ReadByte()
		if err != nil {
			return fmt.Errorf("decode: %w", err)
		}
		if b == ' ' || b == '\t' || b == '\n' || b == '\r' {
			continue
		}
		if err := br.UnreadByte(); err != nil {
			return err
		}
		if b != '{' {
			// Read the value anyway, so an oversize body is reported as such.
			var raw json.RawMessage
			if err := json.NewDecoder(br).Decode(&raw); err != nil {
				return fmt.Errorf("decode: %w", err)
			}
			return ErrNotObject
		}
		break
	}
	var raw json.RawMessage
	dec := json.NewDecoder(br)
	if err := dec.Decode(&raw); err != nil {
		return fmt.Errorf("decode: %w", err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		var se *json.SyntaxError
		if err == nil || errors.As(err, &se) {
			return ErrTrailing
		}
		return fmt.Errorf("decode: %w", err)
	}
	kd := json.NewDecoder(bytes.NewReader(raw))
	if err := checkFields(kd, reflect.TypeOf(v), ""); err != nil {
		return err
	}
	vd := json.NewDecoder(bytes.NewReader(raw))
	vd.DisallowUnknownFields()
	if err := vd.Decode(v); err != nil {
		return fmt.Errorf("decode: %w", err)
	}
	return nil
}

// checkFields walks the next JSON value, refusing a key given twice in one object and,
// where the value is decoded into a struct, a key that is not exactly one of its field
// names. path names where the value is, for the error.
func checkFields(dec *json.Decoder, t reflect.Type, path string) error {
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
			if err := checkFields(dec, ft, name+"."); err != nil {
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
			if err := checkFields(dec, elem, path); err != nil {
				return err
			}
		}
		_, err = dec.Token() // ']'
		return err
	}
	return nil
}

// structFields maps the JSON names encoding/json decodes into t to their types
// (embedded structs' fields inlined).
func structFields(t reflect.Type) map[string]reflect.Type {
	out := map[string]reflect.Type{}
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, _, _ := strings.Cut(tag, ",")
		ft := f.Type
		if f.Anonymous && name == "" {
			for ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			if ft.Kind() == reflect.Struct {
				for k, v := range structFields(ft) {
					if _, ok := out[k]; !ok {
						out[k] = v
					}
				}
				continue
			}
		}
		if !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		out[name] = ft
	}
	return out
}
