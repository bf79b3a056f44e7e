package notify

import (
	"slices"
	"strings"

	"github.com/nudgehq/nudge/controlmode"
)

// credentialSuffixes mark a variable's name as a credential's: a model provider's key the
// agents read (OPENAI_API_KEY, ANTHROPIC_AUTH_TOKEN, GEMINI_API_KEY), a forge's or a
// cloud's token (GITHUB_TOKEN, AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN), a password.
var credentialSuffixes = []string{
	"_API_KEY", "_APIKEY", "_KEY_ID", "_TOKEN", "_SECRET", "_SECRET_KEY", "_ACCESS_KEY",
	"_PASSWORD", "_PASSWD", "_PRIVATE_KEY", "_CREDENTIALS",
}

// credentialName reports whether an environment variable's name marks it as a credential.
func credentialName(name string) bool {
	n := strings.ToUpper(name)
	for _, s := range credentialSuffixes {
		if strings.HasSuffix(n, s) {
			return true
		}
	}
	return false
}

// CommandEnv is a notify command's environment: environ without nudge's own variables
// and TMUX (controlmode.ChildEnv), and without the credentials the daemon's environment
// holds for the agents (credentialName: *_API_KEY, *_TOKEN, *_SECRET, ...) unless keep
// names them (serve --notify-env): a hook that shows or posts an event needs none of them.
func CommandEnv(environ, keep []string) []string {
	out := controlmode.ChildEnv(environ)
	return slices.DeleteFunc(out, func(kv string) bool {
		name, _, _ := strings.Cut(kv, "=")
		return credentialName(name) && !slices.Contains(keep, name)
	})
}
