package controlmode

import (
	"bytes"
	"encoding/binary"
	"math/bits"
)

// Escape appends src to dst escaped as tmux escapes pane output in %output lines
// (control_append_data): every byte below ' ' and the backslash become \ooo (three octal
// digits); every other byte, including 0x7f and bytes >= 0x80, is copied raw.
func Escape(dst, src []byte) []byte {
	for _, b := range src {
		if b < ' ' || b == '\\' {
			dst = append(dst, '\\', '0'+b>>6, '0'+(b>>3)&7, '0'+b&7)
			continue
		}
		dst = append(dst, b)
	}
	return dst
}

// Unescape appends the bytes that src (the data of an %output line) stands for to dst:
// a backslash followed by three octal digits (at most \377) is one byte; anything else,
// including a malformed or truncated escape, is copied as is. It never allocates when dst
// has room for len(src) more bytes.
func Unescape(dst, src []byte) []byte {
	n := len(dst)
	if cap(dst)-n < len(src) {
		dst = append(dst, make([]byte, len(src))...)[:n]
	}
	out := dst[n : n+len(src)]
	i, j := 0, 0 // j <= i always: the output is never longer than the input
	for i < len(src) {
		if i+8 <= len(src) {
			// Eight bytes at a time: store them all, then keep those before a backslash.
			w := binary.LittleEndian.Uint64(src[i:])
			binary.LittleEndian.PutUint64(out[j:], w)
			m := backslashes(w)
			if m == 0 {
				i, j = i+8, j+8
				continue
			}
			p := bits.TrailingZeros64(m) / 8
			i, j = i+p, j+p
		} else if src[i] != '\\' {
			out[j] = src[i]
			i, j = i+1, j+1
			continue
		}
		// src[i] is a backslash.
		if i+3 < len(src) {
			a, b, c := src[i+1]-'0', src[i+2]-'0', src[i+3]-'0' // bytes below '0' wrap high
			if a&^3|b&^7|c&^7 == 0 {
				out[j] = a<<6 | b<<3 | c
				i, j = i+4, j+1
				continue
			}
		}
		out[j] = '\\'
		i, j = i+1, j+1
	}
	return dst[:n+j]
}

// backslashes returns a word whose lowest set bit is the high bit of the first '\\' byte
// in x (0 if there is none); bits above it may be spurious.
func backslashes(x uint64) uint64 {
	const ones, highs, bs = 0x0101010101010101, 0x8080808080808080, 0x5c5c5c5c5c5c5c5c
	x ^= bs
	return (x - ones) &^ x & highs
}

// unvis decodes a name tmux stored with utf8_stravis(VIS_OCTAL|VIS_CSTYLE|VIS_TAB|VIS_NL):
// \ooo octal (1–3 digits), the C escapes \n \r \t \b \a \v \f \s \E and \\, and \X for any
// other X. A trailing lone backslash is kept.
func unvis(s []byte) string {
	if bytes.IndexByte(s, '\\') < 0 {
		return string(s)
	}
	out := make([]byte, 0, len(s))
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '\\' || i+1 == len(s) {
			out = append(out, c)
			continue
		}
		i++
		c = s[i]
		switch {
		case c >= '0' && c <= '7':
			v, n := 0, 0
			for n < 3 && i+n < len(s) && s[i+n] >= '0' && s[i+n] <= '7' {
				v = v<<3 | int(s[i+n]-'0')
				n++
			}
			out = append(out, byte(v))
			i += n - 1
		default:
			out = append(out, cstyle(c))
		}
	}
	return string(out)
}

func cstyle(c byte) byte {
	switch c {
	case 'n':
		return '\n'
	case 'r':
		return '\r'
	case 't':
		return '\t'
	case 'b':
		return '\b'
	case 'a':
		return '\a'
	case 'v':
		return '\v'
	case 'f':
		return '\f'
	case 's':
		return ' '
	case 'E', 'e':
		return 0x1b
	}
	return c
}
