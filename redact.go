package nudge

import "regexp"

// Pane captures can hold whatever an agent or a human printed: API keys, tokens,
// passwords. Everything nudge keeps, logs or sends from a pane (the audit's evidence,
// tail, watch, a screen sent to an LLM classifier) goes through Redact first.

// Redacted is what a masked secret becomes.
const Redacted = "[REDACTED]"

// redactRule masks every match of re with repl, a regexp.Expand template: "${1}" keeps
// the name in front of a secret ("Authorization: [REDACTED]").
type redactRule struct {
	re   *regexp.Regexp
	repl string
}

const (
	mask       = Redacted
	keepName   = "${1}" + Redacted
	keepURLTag = "${1}" + Redacted + "${2}"
)

var redactRules = []redactRule{
	// PEM private key blocks (RSA, EC, OPENSSH, PGP ...), the whole block. An unterminated
	// block (a capture cut in the middle) is masked to the end.
	{regexp.MustCompile(`(?s)-----BEGIN [A-Z0-9 ]*PRIVATE KEY( BLOCK)?-----.*?(-----END [A-Z0-9 ]*PRIVATE KEY( BLOCK)?-----|\z)`), mask},
	// Authorization headers: the whole value, whatever the scheme.
	{regexp.MustCompile(`(?i)(\b(?:proxy-)?authorization\s*[:=]\s*)[^\r\n]+`), keepName},
	// Bearer / token schemes anywhere else.
	{regexp.MustCompile(`(?i)(\bbearer\s+)[A-Za-z0-9\-._~+/]+=*`), keepName},
	// password=..., passwd: ..., secret=..., api_key=..., token=... (values up to a space or quote).
	{regexp.MustCompile(`(?i)(\b(?:password|passwd|pwd|secret|client_secret|api[_-]?key|access[_-]?token|auth[_-]?token|token)\b["']?\s*[:=]\s*["']?)[^\s"'&,;]+`), keepName},
	// Names that end in one of those (GITHUB_TOKEN=..., DB_PASSWORD: ..., credentials=...).
	{regexp.MustCompile(`(?i)(\b[A-Za-z0-9_]*(?:api[_-]?key|token|secret|passw(?:or)?d|credentials?)["']?\s*[:=]\s*["']?)[^\s"'&,;]{4,}`), keepName},
	// Provider keys with recognisable prefixes.
	{regexp.MustCompile(`\b(?:sk|pk|rk)-(?:ant-|proj-|live-|test-)?[A-Za-z0-9_\-]{16,}`), mask},              // OpenAI, Anthropic, Stripe
	{regexp.MustCompile(`\b(?:ghp|gho|ghu|ghs|ghr)_[A-Za-z0-9]{20,}`), mask},                                 // GitHub tokens
	{regexp.MustCompile(`\bgithub_pat_[A-Za-z0-9_]{20,}`), mask},                                             // GitHub fine-grained
	{regexp.MustCompile(`\bglpat-[A-Za-z0-9_\-]{20,}`), mask},                                                // GitLab
	{regexp.MustCompile(`\bxox[abprs]-[A-Za-z0-9\-]{10,}`), mask},                                            // Slack
	{regexp.MustCompile(`\bAIza[0-9A-Za-z_\-]{35}`), mask},                                                   // Google API key
	{regexp.MustCompile(`\b(?:AKIA|ASIA|AGPA|AIDA|AROA|ANPA|ANVA|AIPA)[A-Z0-9]{16}\b`), mask},                // AWS access key id
	{regexp.MustCompile(`(?i)(aws_?secret_?access_?key\b["']?\s*[:=]\s*["']?)[A-Za-z0-9/+=]{40}`), keepName}, // only next to its name
	// nudge's own tokens (orchestrator and runtime): nudge1.<claims>.<signature>.
	{regexp.MustCompile(`\bnudge1\.[A-Za-z0-9_\-]{4,}\.[A-Za-z0-9_\-]{4,}`), mask},
	// JWTs and other three-part base64url tokens starting with a JSON header.
	{regexp.MustCompile(`\beyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}`), mask},
	// URLs with credentials: scheme://user:pass@host.
	{regexp.MustCompile(`([a-zA-Z][a-zA-Z0-9+.\-]*://[^/\s:@]+:)[^/\s@]+(@)`), keepURLTag},
}

// Redact masks obvious secrets in s (private keys, provider keys, tokens, JWTs,
// Authorization headers, credentials in URLs, values of key=value pairs named like
// secrets) with Redacted. It is idempotent. It is the one redactor of the project.
func Redact(s string) string {
	for _, r := range redactRules {
		s = r.re.ReplaceAllString(s, r.repl)
	}
	return s
}
