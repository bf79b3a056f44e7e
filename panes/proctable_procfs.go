package panes

import (
	"bytes"
	"strconv"
)

// parseStat parses a /proc/PID/stat line. The command name (field 2) is in parentheses
// and may hold spaces and parentheses: the fields after it start after the last ')'.
func parseStat(b []byte) (procStat, bool) {
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return procStat{}, false
	}
	f := bytes.Fields(b[i+1:]) // f[0] is field 3 (state)
	if len(f) < 20 || len(f[0]) != 1 {
		return procStat{}, false
	}
	ppid, err1 := strconv.Atoi(string(f[1]))
	start, err2 := strconv.ParseUint(string(f[19]), 10, 64) // field 22
	if err1 != nil || err2 != nil {
		return procStat{}, false
	}
	return procStat{ppid: ppid, state: f[0][0], start: start}, true
}
