package controlmode

import "bytes"

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
	for {
		i := bytes.IndexByte(src, '\\')
		if i < 0 {
			return append(dst, src...)
		}
		dst = append(dst, src[:i]...)
		src = src[i:]
		if len(src) >= 4 && isOctal3(src[1], src[2], src[3]) {
			dst = append(dst, (src[1]-'0')<<6|(src[2]-'0')<<3|(src[3]-'0'))
			src = src[4:]
			continue
		}
		dst = append(dst, '\\')
		src = src[1:]
	}
}

func isOctal3(a, b, c byte) bool {
	return a >= '0' && a <= '3' && b >= '0' && b <= '7' && c >= '0' && c <= '7'
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
