package panes

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/nudgehq/nudge"
)

// ChannelSocket is where the channel socket of runtime id lives in dir (Config.ChannelDir):
// a short name, so that the path stays within a socket address's ~100 bytes.
func ChannelSocket(dir, runtimeID string) string {
	sum := sha256.Sum256([]byte(runtimeID))
	return filepath.Join(dir, hex.EncodeToString(sum[:8])+".sock")
}

// channelArgs returns the flag and path that open prof's channel for rt at launch (and the
// settings file of nudge's permission hook, where the profile has one), or nil
// when the profile has none, Config.ChannelDir is off, the workspace is on another host,
// the path would be too long, or the agent's program does not report ChannelSince or
// newer. The hook's settings file is left out when launch (the argv the flags go into)
// already loads a settings file of the user's: the agent would take only one of them.
func (l *launcher) channelArgs(prof Profile, runtimeID, program string, launch []string) []string {
	if prof.ChannelFlag == "" || l.cfg.ChannelDir == "" || l.cfg.SSHHost != "" {
		return nil
	}
	path := ChannelSocket(l.cfg.ChannelDir, runtimeID)
	if len(path) > maxSocketPath {
		return nil
	}
	if prof.ChannelSince != "" && !programAtLeast(program, prof.ChannelSince) {
		return nil
	}
	if prof.Channel == ChannelOpenCode {
		return l.openCodeArgs(prof, runtimeID)
	}
	args := []string{prof.ChannelFlag, path}
	if prof.PermissionHookFlag != "" && filepath.IsAbs(l.cfg.Self) && !slices.Contains(launch, prof.PermissionHookFlag) {
		file := strings.TrimSuffix(path, ".sock") + ".settings.json"
		if err := writeHookSettings(file, l.cfg.Self); err != nil {
			l.cfg.Logger.Warn("spawn: no permission hook (its settings file)", "runtime", runtimeID, "err", err)
		} else {
			args = append(args, prof.PermissionHookFlag, file)
		}
	}
	return args
}

// HookTimeout is how long Claude Code waits for nudge's PermissionRequest hook before it
// ends it (the dialog on its screen stays, answered by keys): a person may take hours.
const HookTimeout = 24 * time.Hour

// writeHookSettings writes the settings file (0600, replaced whole) whose PermissionRequest
// hook runs `SELF hook claude-permission` for every tool, SELF single-quoted for the shell
// Claude Code runs it with. No secret is in it: the hook reads the runtime's token from
// its environment.
func writeHookSettings(file, self string) error {
	hook := map[string]any{"type": "command", "command": shellQuote(self) + " hook claude-permission",
		"timeout": int(HookTimeout / time.Second)}
	b, err := json.Marshal(map[string]any{"hooks": map[string]any{
		"PermissionRequest": []any{map[string]any{"matcher": "*", "hooks": []any{hook}}}}})
	if err != nil {
		return err
	}
	tmp := file + ".tmp"
	os.Remove(tmp) //nolint:errcheck // a leftover of a write cut short
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, file)
}

// maxSocketPath is the longest socket path every platform binds (sun_path is 104 bytes
// on the BSDs and macOS, with its NUL).
const maxSocketPath = 100

// version is a dotted release number, compared part by part.
type version []int

var versionRE = regexp.MustCompile(`\b(\d+)\.(\d+)\.(\d+)\b`)

// parseVersion reads the first x.y.z in s.
func parseVersion(s string) (version, bool) {
	m := versionRE.FindStringSubmatch(s)
	if m == nil {
		return nil, false
	}
	v := make(version, 3)
	for i := range v {
		n, err := strconv.Atoi(m[i+1])
		if err != nil {
			return nil, false
		}
		v[i] = n
	}
	return v, true
}

func (v version) atLeast(w version) bool {
	for i := range v {
		if v[i] != w[i] {
			return v[i] > w[i]
		}
	}
	return true
}

// programAtLeast reports whether program (found on PATH) prints a version of min or newer
// to --version. The answer is kept per file (path, size, time), so each build of the
// agent's program is asked once.
func programAtLeast(program, min string) bool {
	want, ok := parseVersion(min)
	if !ok {
		return false
	}
	have, ok := programVersion(program)
	return ok && have.atLeast(want)
}

var versions sync.Map // versionKey → version (nil: none read)

type versionKey struct {
	path string
	size int64
	mod  time.Time
}

func programVersion(program string) (version, bool) {
	path, err := exec.LookPath(program)
	if err != nil {
		return nil, false
	}
	fi, err := os.Stat(path)
	if err != nil {
		return nil, false
	}
	key := versionKey{path, fi.Size(), fi.ModTime()}
	if v, ok := versions.Load(key); ok {
		return v.(version), v.(version) != nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, path, "--version")
	var out bytes.Buffer
	cmd.Stdout = &out
	cmd.WaitDelay = time.Second
	// Only what finds the program and its home: nothing of the daemon's own environment.
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME")}
	if err := cmd.Run(); err != nil {
		if ctx.Err() == nil {
			versions.Store(key, version(nil)) // it ran and failed: this build has no --version
		}
		return nil, false
	}
	v, _ := parseVersion(out.String())
	versions.Store(key, v)
	return v, v != nil
}

// OpenCodeServer is where the OpenCode of a runtime serves its HTTP API: a loopback port
// nudge chose at launch and the password nudge gave it (OPENCODE_SERVER_PASSWORD in its
// environment). It is kept in a file of nudge's channel directory (0600), never on a
// command line.
type OpenCodeServer struct {
	Port     int    `json:"port"`
	Password string `json:"password"`
}

// openCodeFile is where runtime id's OpenCodeServer is kept in dir.
func openCodeFile(dir, runtimeID string) string {
	return strings.TrimSuffix(ChannelSocket(dir, runtimeID), ".sock") + ".opencode.json"
}

// OpenCodeChannel reads runtime id's OpenCodeServer from dir: the file must be a regular
// file (not a link) of this uid, readable by no one else.
func OpenCodeChannel(dir, runtimeID string) (OpenCodeServer, error) {
	var s OpenCodeServer
	file := openCodeFile(dir, runtimeID)
	b, err := readRegularFile(file, 4096)
	if err != nil {
		return s, err
	}
	if fi, err := os.Lstat(file); err != nil || fi.Mode().Perm()&0o077 != 0 || !ownedByMe(fi) {
		return s, fmt.Errorf("the OpenCode channel file of %s is not this user's alone", runtimeID)
	}
	if err := json.Unmarshal(b, &s); err != nil || s.Port <= 0 || s.Port > 65535 || len(s.Password) < 32 {
		return OpenCodeServer{}, fmt.Errorf("the OpenCode channel file of %s does not read", runtimeID)
	}
	return s, nil
}

// openCodeArgs chooses a free loopback port and a fresh password for runtime id's
// OpenCode, keeps them (OpenCodeChannel) and returns the flags that serve its API there;
// nil when none could be kept, or off Linux (where nudge cannot tell whose the port's
// listener is, and so never uses it). The password reaches the program through its
// environment (envArgs), never its argv.
func (l *launcher) openCodeArgs(prof Profile, runtimeID string) []string {
	if runtime.GOOS != "linux" {
		return nil
	}
	port := freeFixedPort()
	if port == 0 {
		return nil
	}
	var pw [24]byte
	rand.Read(pw[:]) //nolint:errcheck // crypto/rand.Read never fails
	b, _ := json.Marshal(OpenCodeServer{Port: port, Password: hex.EncodeToString(pw[:])})
	file := openCodeFile(l.cfg.ChannelDir, runtimeID)
	tmp := file + ".tmp"
	os.Remove(tmp) //nolint:errcheck // a leftover of a write cut short
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		return nil
	}
	if err := os.Rename(tmp, file); err != nil {
		return nil
	}
	return []string{prof.ChannelFlag, strconv.Itoa(port), "--hostname", "127.0.0.1"}
}

// freeFixedPort is a random loopback port below the kernel's ephemeral range that nothing
// listens on now, or 0. Not an ephemeral one: between this check and the agent's bind,
// any outgoing connection of the machine may take an ephemeral port as its own, and
// OpenCode (1.18.33) whose port is taken hangs at start with an empty screen.
func freeFixedPort() int {
	low, high := 10000, 32767
	if b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range"); err == nil {
		if f := strings.Fields(string(b)); len(f) == 2 {
			if first, err := strconv.Atoi(f[0]); err == nil && first-1 < high {
				high = first - 1
			}
		}
	}
	if high-low < 1000 {
		return 0
	}
	for range 20 {
		var r [2]byte
		rand.Read(r[:]) //nolint:errcheck // crypto/rand.Read never fails
		port := low + (int(r[0])<<8|int(r[1]))%(high-low+1)
		ln, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(port))
		if err != nil {
			continue
		}
		ln.Close()
		return port
	}
	return 0
}

// openCodeEnv is the environment entry that gives rt's OpenCode its password, when its
// profile's channel is OpenCode's and nudge keeps one for it.
func (l *launcher) openCodeEnv(rt *nudge.Runtime) []string {
	if l.cfg.Profiles[rt.Agent].Channel != ChannelOpenCode || l.cfg.ChannelDir == "" || rt.Host != "" {
		return nil
	}
	s, err := OpenCodeChannel(l.cfg.ChannelDir, rt.RuntimeID)
	if err != nil {
		return nil
	}
	return []string{"OPENCODE_SERVER_PASSWORD=" + s.Password}
}

// ownedByMe reports whether fi is of a file this process's uid owns.
func ownedByMe(fi os.FileInfo) bool {
	st, ok := fi.Sys().(*syscall.Stat_t)
	return ok && int(st.Uid) == os.Getuid()
}
