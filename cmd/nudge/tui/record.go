package tui

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"text/tabwriter"
)

// PrintRecord prints one small record as indented JSON (asJSON) or as a table of its
// fields, FIELD and VALUE a line each, in the order its JSON has them: for the answers
// that have no table of their own (deregister, heartbeat, unblock, schedule rm, version).
func PrintRecord(w io.Writer, asJSON bool, v any) error {
	if asJSON {
		return PrintJSON(w, v)
	}
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return PrintJSON(w, v) // not an object: JSON is its only form
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "FIELD\tVALUE")
	for dec.More() {
		k, err := dec.Token()
		if err != nil {
			return err
		}
		var val json.RawMessage
		if err := dec.Decode(&val); err != nil {
			return err
		}
		var s string
		if json.Unmarshal(val, &s) != nil {
			s = string(val) // numbers, booleans, lists as JSON
		}
		fmt.Fprintf(tw, "%s\t%s\n", Printable(fmt.Sprint(k)), Printable(s))
	}
	return tw.Flush()
}
