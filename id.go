package nudge

// IDCharset is the one id charset, as a regexp character class body: trigger and thread
// ids, envelope field values, the id after an ack marker and an orchestrator token's
// subject are made of these bytes.
const IDCharset = `A-Za-z0-9_.:@/-`

// MaxIDLen is the longest valid id, in bytes.
const MaxIDLen = 128

// IsIDByte reports whether c is in the id charset [A-Za-z0-9_.:@/-].
func IsIDByte(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' ||
		c == '_' || c == '.' || c == ':' || c == '@' || c == '/' || c == '-'
}

// ValidID reports whether s is an id: 1 to MaxIDLen bytes of the id charset.
func ValidID(s string) bool {
	if len(s) == 0 || len(s) > MaxIDLen {
		return false
	}
	for i := 0; i < len(s); i++ {
		if !IsIDByte(s[i]) {
			return false
		}
	}
	return true
}

// CheckID returns nil if s is a valid id, else a BAD_REQUEST *Error naming the field
// ("trigger_id must match [A-Za-z0-9_.:@/-]{1,128}").
func CheckID(field, s string) error {
	if ValidID(s) {
		return nil
	}
	return NewError(BadRequest, field+" must match ["+IDCharset+"]{1,128}")
}
