package agentchannel

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// listenerHeldBy checks that every listening TCP socket on port (IPv4 and IPv6, any
// address) is held open by root or a process below it, and that there is at least one:
// /proc/net/tcp{,6} name each listener's inode and uid, /proc/PID/fd the sockets each
// process holds.
func listenerHeldBy(port, root int) error {
	inodes := map[string]bool{}
	for _, file := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		b, err := os.ReadFile(file)
		if err != nil {
			continue
		}
		sc := bufio.NewScanner(bytes.NewReader(b))
		for sc.Scan() {
			f := strings.Fields(sc.Text())
			if len(f) < 10 || f[3] != "0A" { // 0A: LISTEN
				continue
			}
			_, hexPort, ok := strings.Cut(f[1], ":")
			if p, err := strconv.ParseUint(hexPort, 16, 16); !ok || err != nil || int(p) != port {
				continue
			}
			if uid, err := strconv.Atoi(f[7]); err != nil || uid != os.Getuid() {
				return fmt.Errorf("a listener of uid %s", f[7])
			}
			inodes[f[9]] = true
		}
	}
	if len(inodes) == 0 {
		return errors.New("nothing listens there")
	}
	for _, pid := range below(root) {
		fds, _ := os.ReadDir(filepath.Join("/proc", strconv.Itoa(pid), "fd"))
		for _, fd := range fds {
			link, err := os.Readlink(filepath.Join("/proc", strconv.Itoa(pid), "fd", fd.Name()))
			if inode, ok := strings.CutPrefix(link, "socket:["); err == nil && ok {
				delete(inodes, strings.TrimSuffix(inode, "]"))
			}
		}
	}
	if len(inodes) > 0 {
		return errors.New("a listener that is not the runtime's program")
	}
	return nil
}

// below is root and every process below it (from each process's parent in /proc).
func below(root int) []int {
	ents, _ := os.ReadDir("/proc")
	children := map[int][]int{}
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...: comm may hold spaces and parentheses.
		i := bytes.LastIndexByte(b, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(string(b[i+1:]))
		if len(f) < 2 {
			continue
		}
		if ppid, err := strconv.Atoi(f[1]); err == nil {
			children[ppid] = append(children[ppid], pid)
		}
	}
	out := []int{root}
	for i := 0; i < len(out); i++ {
		out = append(out, children[out[i]]...)
	}
	return out
}
