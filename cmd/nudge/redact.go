package main

import (
	"regexp"
	"strings"
)

// Pane captures can hold whatever an agent or a human printed: API keys, tokens, passwords.
// Everything nudge logs or returns from a pane (tail, watch) goes through redact first.

const redacted = "[REDACTED]"

// redactRule masks a match. With keep, the first submatch (the name in front of the secret)
// stays: "Authorization: [REDACTED]" keeps its header name.
type redactRule struct {
	re   *regexp.Regexp
	keep bool
}

var redactRules = []redactRule{
	// PEM private key blocks (RSA, EC, OPENSSH, PGP ...), the whole block. An unterminated
	// block (a capture cut in the middle) is masked to the end.
	{re: regexp.MustCompile(`(?s)-----BEGIN [A-Z0-9 ]*PRIVATE KEY( BLOCK)?-----.*?(-----END [A-Z0-9 ]*PRIVATE KEY( BLOCK)?-----|\z)`)},
	// Authorization headers: the whole value, whatever the scheme.
	{re: regexp.MustCompile(`(?i)(\b(?:proxy-)?authorization\s*[:=]\s*)[^\r\n]+`), keep: true},
	// Bearer / token schemes anywhere else.
	{re: regexp.MustCompile(`(?i)(\bbearer\s+)[A-Za-z0-9\-._~+/]+=*`), keep: true},
	// password=..., passwd: ..., secret=..., api_key=..., token=... (values up to a space or quote).
	{re: regexp.MustCompile(`(?i)(\b(?:password|passwd|pwd|secret|client_secret|api[_-]?key|access[_-]?token|auth[_-]?token|token)\b["']?\s*[:=]\s*["']?)[^\s"'&,;]+`), keep: true},
	// Provider keys with recognisable prefixes.
	{re: regexp.MustCompile(`\bsk-(?:ant-|proj-|live-|test-)?[A-Za-z0-9_\-]{16,}`)},         // OpenAI, Anthropic, Stripe
	{re: regexp.MustCompile(`\b(?:ghp|gho|ghu|ghs|ghr)_[A-Za-z0-9]{30,}`)},                  // GitHub tokens
	{re: regexp.MustCompile(`\bgithub_pat_[A-Za-z0-9_]{40,}`)},                              // GitHub fine-grained
	{re: regexp.MustCompile(`\bglpat-[A-Za-z0-9_\-]{20,}`)},                                 // GitLab
	{re: regexp.MustCompile(`\bxox[abprs]-[A-Za-z0-9\-]{10,}`)},                             // Slack
	{re: regexp.MustCompile(`\bAIza[0-9A-Za-z_\-]{35}`)},                                    // Google API key
	{re: regexp.MustCompile(`\b(?:AKIA|ASIA|AGPA|AIDA|AROA|ANPA|ANVA|AIPA)[A-Z0-9]{16}\b`)}, // AWS access key id
	// AWS secret access keys: only next to their name (40 base64 chars alone are too common).
	{re: regexp.MustCompile(`(?i)(aws_?secret_?access_?key\b["']?\s*[:=]\s*["']?)[A-Za-z0-9/+=]{40}`), keep: true},
	// nudge's own tokens (orchestrator and runtime): nudge1.<claims>.<signature>.
	{re: regexp.MustCompile(`\bnudge1\.[A-Za-z0-9_\-]{4,}\.[A-Za-z0-9_\-]{4,}`)},
	// JWTs.
	{re: regexp.MustCompile(`\beyJ[A-Za-z0-9_\-]{8,}\.eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}`)},
	// URLs with credentials: scheme://user:pass@host.
	{re: regexp.MustCompile(`([a-zA-Z][a-zA-Z0-9+.\-]*://[^/\s:@]+:)[^/\s@]+(@)`), keep: true},
}

// redact masks secrets in s.
func redact(s string) string {
	for _, r := range redactRules {
		if !r.keep {
			s = r.re.ReplaceAllString(s, redacted)
			continue
		}
		s = r.re.ReplaceAllStringFunc(s, func(m string) string {
			sub := r.re.FindStringSubmatch(m)
			out := sub[1] + redacted
			if len(sub) > 2 && sub[len(sub)-1] == "@" { // credentials in a URL keep the '@'
				out += "@"
			}
			return out
		})
	}
	return s
}

// ansiRE matches CSI, OSC (BEL- or ST-terminated), and two-byte escape sequences.
var ansiRE = regexp.MustCompile(`\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[@-Z\\-_]`)

// stripANSI removes terminal escape sequences and the control bytes left over (keeping tab
// and newline), so captured text is safe to print in another terminal.
func stripANSI(s string) string {
	s = ansiRE.ReplaceAllString(s, "")
	return strings.Map(func(r rune) rune {
		if r == '\n' || r == '\t' {
			return r
		}
		if r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) {
			return -1
		}
		return r
	}, s)
}

// cleanCapture is what a pane capture becomes before it leaves the daemon.
func cleanCapture(s string) string { return redact(stripANSI(s)) }
