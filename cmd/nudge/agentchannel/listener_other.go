//go:build !linux

package agentchannel

import "errors"

// listenerHeldBy: who holds a listening port is not read on this platform, so OpenCode's
// channel stays off (its prompts are typed).
func listenerHeldBy(port, root int) error {
	return errors.New("the listener's owner cannot be checked on this platform")
}
