package agentchannel

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"github.com/nudgehq/nudge"
	"github.com/nudgehq/nudge/ack"
	"github.com/nudgehq/nudge/inject"
	"github.com/nudgehq/nudge/inject/native"
	"github.com/nudgehq/nudge/panes"
)

// BackendClaude is the receipt's delivery_backend of a prompt handed to Claude Code's
// messaging socket.
const BackendClaude = "claude_messaging_socket"

// claudeTimeout bounds connecting to a Claude session's socket and writing the prompt.
const claudeTimeout = 2 * time.Second

// claude hands text to the Claude Code session of rt through the messaging socket nudge
// opened for it at launch (panes.ChannelSocket in Dir): one user frame, queued by the
// session for its next turn ("priority":"next"), with a transcript id derived from the
// trigger's, so the record names the prompt. The socket must be there, a socket (not a
// link), this uid's, and its listener this uid's (peer credentials); otherwise nothing is sent (inject.ErrNoChannel: the prompt is typed).
func (c *Channels) claude(ctx context.Context, rt nudge.Runtime, text string) (string, error) {
	if c.Dir == "" {
		return "", fmt.Errorf("%w: no channel directory", inject.ErrNoChannel)
	}
	path := panes.ChannelSocket(c.Dir, rt.RuntimeID)
	if err := ownSocket(path); err != nil {
		return "", fmt.Errorf("%w: %v", inject.ErrNoChannel, err)
	}
	frame, err := claudeFrame(text)
	if err != nil {
		return "", fmt.Errorf("%w: %v", inject.ErrNoChannel, err)
	}
	ctx, cancel := context.WithTimeout(ctx, claudeTimeout)
	defer cancel()
	var d net.Dialer
	conn, err := d.DialContext(ctx, "unix", path)
	if err != nil {
		return "", fmt.Errorf("%w: %v", inject.ErrNoChannel, err)
	}
	defer conn.Close()
	if err := native.PeerIsMe(conn); err != nil {
		return "", fmt.Errorf("%w: %v", inject.ErrNoChannel, err)
	}
	if dl, ok := ctx.Deadline(); ok {
		conn.SetWriteDeadline(dl) //nolint:errcheck // a failed write says it
	}
	if n, err := conn.Write(frame); err != nil {
		if n == 0 {
			return "", fmt.Errorf("%w: %v", inject.ErrNoChannel, err)
		}
		return BackendClaude, err // part of it went: the record decides
	}
	return BackendClaude, nil
}

// ownSocket checks that path is a socket this uid owns (not a link, not another user's).
func ownSocket(path string) error {
	fi, err := os.Lstat(path)
	if err != nil {
		return fmt.Errorf("no messaging socket for the session (started without one, or by an older Claude Code): %v", err)
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	switch {
	case fi.Mode()&os.ModeSocket == 0:
		return fmt.Errorf("%s is not a socket", filepath.Base(path))
	case !ok || int(st.Uid) != os.Getuid():
		return fmt.Errorf("%s is not this user's", filepath.Base(path))
	}
	return nil
}

// claudeFrame is the NDJSON line that gives text to a Claude Code session as a user
// message, with a transcript id derived from its trigger's (claudeUUID).
func claudeFrame(text string) ([]byte, error) {
	ids := ack.EnvelopeIDs(text)
	if len(ids) != 1 {
		return nil, errors.New("the prompt holds no single trigger envelope")
	}
	msg := map[string]any{
		"type":     "user",
		"message":  map[string]any{"role": "user", "content": text},
		"priority": "next",
		"msg_id":   ids[0],
		"uuid":     claudeUUID(ids[0]),
	}
	b, err := json.Marshal(msg)
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}

// claudeUUID is a version 4 shaped UUID derived from trigger id: the same trigger always
// gets the same transcript id.
func claudeUUID(id string) string {
	sum := sha256.Sum256([]byte("nudge trigger " + id))
	b := sum[:16]
	b[6], b[8] = b[6]&0x0f|0x40, b[8]&0x3f|0x80
	h := hex.EncodeToString(b)
	return h[:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}
