package wake

import "github.com/spf13/pflag"

// Flags binds the serve flags of the wake policies (docs/wake.md) to w.
func Flags(fs *pflag.FlagSet, w *Config) {
	fs.DurationVar(&w.Quiet, "wake-quiet", w.Quiet, "prompt a READY agent whose pane printed nothing for this long (e.g. 15m; 0: off)")
	fs.DurationVar(&w.Unread, "wake-unread", w.Unread, "prompt an agent whose read cursor has lagged a thread head (POST /v1/threads/{id}/head) this long (0: off)")
	fs.DurationVar(&w.Dormant, "wake-dormant", w.Dormant, "prompt an agent that sent heartbeats and has sent none for this long (0: off)")
	fs.DurationVar(&w.Gap, "wake-gap", w.Gap, "least time between two wake prompts to one workspace")
	fs.DurationVar(&w.Every, "wake-every", w.Every, "how often the wake policies are checked")
	fs.StringVar(&w.QuietPrompt, "wake-quiet-prompt", "", "the quiet policy's prompt (default: ask for a progress report)")
	fs.StringVar(&w.UnreadPrompt, "wake-unread-prompt", "", "the unread policy's prompt (the threads and the agent's cursor are added)")
	fs.StringVar(&w.DormantPrompt, "wake-dormant-prompt", "", "the dormant policy's prompt (default: ask for a status report)")
}
