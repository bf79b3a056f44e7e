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
	"sync"
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
	if err := checkFields(raw, reflect.TypeOf(v)); err != nil {
		return err
	}
	vd := json.NewDecoder(bytes.NewReader(raw))
	vd.DisallowUnknownFields()
	if err := vd.Decode(v); err != nil {
		return fmt.Errorf("decode: %w", err)
	}
	return nil
}

// checkFields walks raw (one JSON value that encoding/json has already accepted, so it
// is well-formed), refusing a key given twice in one object and, where the value is
// decoded into a struct, a key that is not exactly one of its field names. It scans the
// bytes itself: the json.Decoder token API allocated for every token, the largest cost of
// decoding a trigger request.
func checkFields(raw []byte, t reflect.Type) error {
	w := fieldWalker{b: raw}
	return w.value(t, "")
}

// fieldWalker is checkFields' cursor over a well-formed JSON value.
type fieldWalker struct {
	b []byte
	i int
}

func (w *fieldWalker) space() {
	for w.i < len(w.b) {
		switch w.b[w.i] {
		case ' ', '\t', '\n', '\r':
			w.i++
		default:
			return
		}
	}
}

// str reads the string at the cursor and returns its decoded bytes: a slice of raw when
// it has no escapes.
func (w *fieldWalker) str() ([]byte, error) {
	start := w.i
	w.i++            // '"'
	escaped := false // escapes or non-ASCII: decoded as encoding/json does (U+FFFD for bad UTF-8)
	for w.i < len(w.b) {
		switch c := w.b[w.i]; {
		case c == '\\':
			escaped = true
			w.i += 2
			continue
		case c >= 0x80:
			escaped = true
		case c == '"':
			w.i++
			if !escaped {
				return w.b[start+1 : w.i-1], nil
			}
			var s string
			if err := json.Unmarshal(w.b[start:w.i], &s); err != nil {
				return nil, fmt.Errorf("decode: %w", err)
			}
			return []byte(s), nil
		}
		w.i++
	}
	return nil, fmt.Errorf("decode: %w", io.ErrUnexpectedEOF)
}

// value checks the value at the cursor and moves past it. path names where it is.
func (w *fieldWalker) value(t reflect.Type, path string) error {
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	w.space()
	if w.i >= len(w.b) {
		return fmt.Errorf("decode: %w", io.ErrUnexpectedEOF)
	}
	switch w.b[w.i] {
	case '{':
		w.i++
		return w.object(t, path)
	case '[':
		w.i++
		return w.array(t, path)
	}
	return w.scalar()
}

// object walks an object's members after its '{': each key once, each known to t (a
// struct) or any key (a map), each value walked as its field's type.
func (w *fieldWalker) object(t reflect.Type, path string) error {
	var fields map[string]reflect.Type
	var elem reflect.Type
	if t != nil && t.Kind() == reflect.Struct {
		fields = structFields(t)
	} else if t != nil && t.Kind() == reflect.Map {
		elem = t.Elem()
	}
	var seenBuf [24][]byte
	seen := seenBuf[:0]
	for {
		w.space()
		if w.i < len(w.b) && w.b[w.i] == '}' {
			w.i++
			return nil
		}
		if w.i < len(w.b) && w.b[w.i] == ',' {
			w.i++
			w.space()
		}
		key, err := w.str()
		if err != nil {
			return err
		}
		for _, k := range seen {
			if bytes.Equal(k, key) {
				return fmt.Errorf("%w: %q is given twice", ErrFieldName, path+string(key))
			}
		}
		seen = append(seen, key)
		ft := elem
		if fields != nil {
			if ft, err = fieldType(fields, path, string(key)); err != nil {
				return err
			}
		}
		w.space()
		w.i++ // ':'
		w.space()
		if w.i < len(w.b) && (w.b[w.i] == '{' || w.b[w.i] == '[') {
			if err := w.value(ft, path+string(key)+"."); err != nil {
				return err
			}
		} else if err := w.scalar(); err != nil {
			return err
		}
	}
}

// fieldType is the type of a struct's field key, or the error naming an unknown field
// (and the right spelling of one given in the wrong case).
func fieldType(fields map[string]reflect.Type, path, key string) (reflect.Type, error) {
	if ft, ok := fields[key]; ok {
		return ft, nil
	}
	for f := range fields {
		if strings.EqualFold(f, key) {
			return nil, fmt.Errorf("%w: %q: field names are case-sensitive (want %q)", ErrFieldName, path+key, path+f)
		}
	}
	return nil, fmt.Errorf("decode: json: unknown field %q", path+key)
}

// array walks an array's elements after its '[', each as t's element type.
func (w *fieldWalker) array(t reflect.Type, path string) error {
	var elem reflect.Type
	if t != nil && (t.Kind() == reflect.Slice || t.Kind() == reflect.Array) {
		elem = t.Elem()
	}
	for {
		w.space()
		if w.i < len(w.b) && w.b[w.i] == ']' {
			w.i++
			return nil
		}
		if w.i < len(w.b) && w.b[w.i] == ',' {
			w.i++
		}
		if err := w.value(elem, path); err != nil {
			return err
		}
	}
}

// scalar moves past a string, number, true, false or null.
func (w *fieldWalker) scalar() error {
	w.space()
	if w.i < len(w.b) && w.b[w.i] == '"' {
		_, err := w.strSkip()
		return err
	}
	for w.i < len(w.b) {
		switch w.b[w.i] {
		case ',', '}', ']', ' ', '\t', '\n', '\r':
			return nil
		}
		w.i++
	}
	return nil
}

// strSkip moves past the string at the cursor without decoding it.
func (w *fieldWalker) strSkip() (int, error) {
	w.i++ // '"'
	for w.i < len(w.b) {
		switch w.b[w.i] {
		case '\\':
			w.i += 2
			continue
		case '"':
			w.i++
			return w.i, nil
		}
		w.i++
	}
	return w.i, fmt.Errorf("decode: %w", io.ErrUnexpectedEOF)
}

// fieldCache holds structFields' maps by type: request types are few and fixed.
var fieldCache sync.Map // reflect.Type -> map[string]reflect.Type

// structFields maps the JSON names encoding/json decodes into t to their types
// (embedded structs' fields inlined). The map is shared: callers must not change it.
func structFields(t reflect.Type) map[string]reflect.Type {
	if m, ok := fieldCache.Load(t); ok {
		return m.(map[string]reflect.Type)
	}
	m := buildStructFields(t)
	fieldCache.Store(t, m)
	return m
}

func buildStructFields(t reflect.Type) map[string]reflect.Type {
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
