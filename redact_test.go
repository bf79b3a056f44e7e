package nudge

import (
	"strings"
	"testing"
)

func TestRedact(t *testing.T) {
	tests := []struct {
		in, want string
	}{
		{"plain text, nothing secret here", "plain text, nothing secret here"},
		{"export OPENAI_API_KEY=sk-proj-abcdefghijklmnop1234567890", "export OPENAI_API_KEY=[REDACTED]"},
		{"key sk-ant-api03-abcdefghijklmnopqrstuvwx in the middle", "key [REDACTED] in the middle"},
		{"token ghp_abcdefghijklmnopqrstuvwxyz0123456789 leaked", "token [REDACTED] leaked"},
		{"github_pat_11ABCDEFG0abcdefghijklmnopqrstuvwxyz0123456789ABCDEF", "[REDACTED]"},
		{"aws AKIAIOSFODNN7EXAMPLE id", "aws [REDACTED] id"},
		{"aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", "aws_secret_access_key = [REDACTED]"},
		{"Authorization: Basic dXNlcjpwYXNz", "Authorization: [REDACTED]"},
		{"curl -H 'authorization: token abc123'", "curl -H 'authorization: [REDACTED]"},
		{"sending Bearer abc.def-ghi_jkl== now", "sending Bearer [REDACTED] now"},
		{"mysql --password=hunter2 -u root", "mysql --password=[REDACTED] -u root"},
		{`{"password": "hunter2", "user": "bob"}`, `{"password": "[REDACTED]", "user": "bob"}`},
		{"PASSWD: s3cr3t", "PASSWD: [REDACTED]"},
		{"api_key=abcd1234&x=1", "api_key=[REDACTED]&x=1"},
		{"git clone https://bob:hunter2@example.com/r.git", "git clone https://bob:[REDACTED]@example.com/r.git"},
		{"xoxb-123456789012-abcdefghij", "[REDACTED]"},
		{"jwt eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV", "jwt [REDACTED]"},
		{"a\n-----BEGIN RSA PRIVATE KEY-----\nMIIEow\nxyz\n-----END RSA PRIVATE KEY-----\nb", "a\n[REDACTED]\nb"},
		{"-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1r\n(cut)", "[REDACTED]"},
		{"the word token alone, a password prompt", "the word token alone, a password prompt"},
		{"sk-short", "sk-short"},
		// From the detector's redactor, merged into this one.
		{"export GITHUB_TOKEN=abcdef0123", "export GITHUB_TOKEN=[REDACTED]"},
		{"DB_PASSWORD: 'hunter2hunter2'", "DB_PASSWORD: '[REDACTED]'"},
		{"credentials=abcd1234", "credentials=[REDACTED]"},
		{"rk-abcdefghijklmnop1234 pk-abcdefghijklmnop1234", "[REDACTED] [REDACTED]"},
		{"gho_abcdefghijklmnopqrst0", "[REDACTED]"},
		{"tok nudge1.eyJzdWIiOiJ4In0.c2lnbmF0dXJl", "tok [REDACTED]"},
		{"eyJhbGciOiJIUzI1NiJ9.abcdefghijkl.mnopqrstuvwx", "[REDACTED]"},
		{"$ go test ./...\nok  pkg 0.2s", "$ go test ./...\nok  pkg 0.2s"},
	}
	for i, tt := range tests {
		if got := Redact(tt.in); got != tt.want {
			t.Errorf("#%d: Redact(%q)\n got %q\nwant %q", i, tt.in, got, tt.want)
		}
	}
}

func TestRedactIdempotent(t *testing.T) {
	in := "Authorization: Bearer sk-abcdefghijklmnopqrstuvwx password=x ghp_abcdefghijklmnopqrstuvwxyz0123456789"
	once := Redact(in)
	if twice := Redact(once); twice != once {
		t.Fatalf("not idempotent:\n%q\n%q", once, twice)
	}
	for _, s := range []string{"sk-abc", "ghp_abc", "password=x"} {
		if strings.Contains(once, s) {
			t.Errorf("%q survived: %q", s, once)
		}
	}
}
