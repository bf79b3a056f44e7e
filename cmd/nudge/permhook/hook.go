package permhook

import (
	"context"
	"encoding/json"
	"io"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/nudgehq/nudge/cmd/nudge/api"
)

// HookCLI is what the hook command needs from the CLI.
type HookCLI struct {
	// Client is a client of the daemon with the runtime's own token ($NUDGE_SOCKET,
	// $NUDGE_RUNTIME_TOKEN).
	Client func() *api.Client
	Getenv func(string) string
	Stdin  io.Reader
	Stdout io.Writer
}

// maxHookInput bounds what the hook reads from Claude Code.
const maxHookInput = 1 << 20

// HookCommand is `nudge hook claude-permission`, the PermissionRequest hook nudge gives the
// Claude Code sessions it spawns: it reads the request on stdin, posts it to the daemon
// for the runtime of $NUDGE_RUNTIME_ID, waits for the answer, and prints it in Claude
// Code's hook output. It prints nothing and exits 0 (Claude Code's own dialog decides)
// when anything is missing or fails: a hook of nudge's never stands in the agent's way.
func HookCommand(cli HookCLI) *cobra.Command {
	root := &cobra.Command{Use: "hook", Short: "agents' hooks that call back into nudge (run by the agents nudge spawns)", Hidden: true}
	root.AddCommand(&cobra.Command{
		Use:   "claude-permission",
		Short: "Claude Code's PermissionRequest hook: the dialog is answered by nudge, or on the screen",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			out, ok := claudePermission(cmd.Context(), cli)
			if ok {
				cli.Stdout.Write(out) //nolint:errcheck // Claude Code reads it or the dialog decides
			}
			return nil
		},
	})
	return root
}

// hookInput is the part of Claude Code's PermissionRequest hook input nudge reads.
type hookInput struct {
	Event     string `json:"hook_event_name"`
	SessionID string `json:"session_id"`
	Tool      string `json:"tool_name"`
	Cwd       string `json:"cwd"`
	Input     struct {
		Command string `json:"command"`
	} `json:"tool_input"`
}

// claudePermission posts the request and returns the hook's output (ok false: none).
func claudePermission(ctx context.Context, cli HookCLI) ([]byte, bool) {
	id := cli.Getenv("NUDGE_RUNTIME_ID")
	if id == "" || cli.Getenv("NUDGE_RUNTIME_TOKEN") == "" {
		return nil, false // not a pane nudge spawned
	}
	var in hookInput
	if err := json.NewDecoder(io.LimitReader(cli.Stdin, maxHookInput)).Decode(&in); err != nil || in.Event != "PermissionRequest" {
		return nil, false
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go orphaned(ctx, cancel) // Claude Code gone: nothing waits for the answer
	c := cli.Client()
	defer c.Close()
	d, err := c.Permission(ctx, id, api.PermissionRequest{SessionID: in.SessionID, Tool: in.Tool, Command: in.Input.Command, Cwd: in.Cwd})
	if err != nil || (d.Behavior != "allow" && d.Behavior != "deny") {
		return nil, false
	}
	decision := map[string]any{"behavior": d.Behavior}
	if d.Behavior == "deny" {
		// The turn stops, as Claude Code's own "No" stops it; the reason is the message.
		decision["message"], decision["interrupt"] = d.Message, true
	}
	out, err := json.Marshal(map[string]any{"hookSpecificOutput": map[string]any{"hookEventName": "PermissionRequest", "decision": decision}})
	return out, err == nil
}

// orphaned cancels when the process that ran the hook has ended (the parent changes).
func orphaned(ctx context.Context, cancel context.CancelFunc) {
	parent := os.Getppid()
	t := time.NewTicker(2 * time.Second)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if os.Getppid() != parent {
				cancel()
				return
			}
		}
	}
}
