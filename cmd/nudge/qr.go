package main

import (
	"strings"

	"rsc.io/qr"
)

// qrText draws link as a QR code for a terminal: two modules a character with half
// blocks, light modules drawn (a terminal's background is usually dark) inside a quiet
// zone of two. "" when the link does not fit a QR code.
func qrText(link string) string {
	c, err := qr.Encode(link, qr.L)
	if err != nil {
		return ""
	}
	const quiet = 2
	light := func(x, y int) bool { return !c.Black(x, y) } // outside the code is light too
	var b strings.Builder
	for y := -quiet; y < c.Size+quiet; y += 2 {
		for x := -quiet; x < c.Size+quiet; x++ {
			top, bottom := light(x, y), light(x, y+1) && y+1 < c.Size+quiet
			switch {
			case top && bottom:
				b.WriteString("█")
			case top:
				b.WriteString("▀")
			case bottom:
				b.WriteString("▄")
			default:
				b.WriteByte(' ')
			}
		}
		b.WriteByte('\n')
	}
	return b.String()
}
