// Package ack turns what an agent does into acknowledgements of triggers. This part
// of it holds the marker scanner:
//
//	Matcher  finds ACK_TRIGGER:<id> in a pane's live output stream, ANSI stripped,
//	         across chunk boundaries, without allocating
package ack
