package auth

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// Errors DecodeJSON returns besides wrapped JSON and read errors.
var (
	ErrNotObject = errors.New("want a JSON object")
	ErrTrailing  = errors.New("trailing data after the JSON object")
)

// DecodeJSON reads exactly one JSON object from r into v: anything but an object (null
// included), unknown fields and trailing data are errors. Bound r (http.MaxBytesReader)
// before calling; a read error from r is returned wrapped, so errors.As finds it.
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
	dec := json.NewDecoder(br)
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("decode: %w", err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		var se *json.SyntaxError
		if err == nil || errors.As(err, &se) {
			return ErrTrailing
		}
		return fmt.Errorf("decode: %w", err)
	}
	return nil
}
