// Package buildinfo says which nudge this binary is: its module version and the commit it
// was built from, read from the build information Go embeds in every binary, so `nudge
// version`, /v1/health and the MCP server's info name a real version instead of "dev".
package buildinfo

import (
	"runtime/debug"
	"strings"
)

// Info is what a binary knows of its own build.
type Info struct {
	Version  string `json:"version"`            // v1.2.3 for a tagged module, else devel+COMMIT or "dev"
	Module   string `json:"module,omitempty"`   // the main module's path
	Commit   string `json:"commit,omitempty"`   // the VCS revision it was built from
	Modified bool   `json:"modified,omitempty"` // built from a work tree with uncommitted changes
	Go       string `json:"go,omitempty"`       // the Go toolchain that built it
}

// Read returns this binary's Info. override, when not empty and not "dev", is a version
// set at link time (-ldflags "-X main.version=...") and wins over the module version.
func Read(override string) Info {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return FromBuildInfo(override, nil)
	}
	return FromBuildInfo(override, bi)
}

// FromBuildInfo is Read over given build information (nil: none).
func FromBuildInfo(override string, bi *debug.BuildInfo) Info {
	in := Info{Version: "dev"}
	if bi != nil {
		in.Module, in.Go = bi.Main.Path, bi.GoVersion
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				in.Commit = s.Value
			case "vcs.modified":
				in.Modified = s.Value == "true"
			}
		}
		switch v := bi.Main.Version; {
		case v != "" && v != "(devel)":
			in.Version = v // go install module@version: the tag, or a pseudo-version naming the commit
		case in.Commit != "":
			in.Version = "devel+" + short(in.Commit)
			if in.Modified {
				in.Version += "-dirty"
			}
		}
	}
	if override != "" && override != "dev" {
		in.Version = override
	}
	return in
}

// String is the one-line form: "nudge v1.2.3 (commit abc123def456, go1.26.8)".
func (in Info) String() string {
	var b strings.Builder
	b.WriteString("nudge " + in.Version)
	var extra []string
	if in.Commit != "" {
		c := "commit " + short(in.Commit)
		if in.Modified {
			c += " with local changes"
		}
		extra = append(extra, c)
	}
	if in.Go != "" {
		extra = append(extra, in.Go)
	}
	if len(extra) > 0 {
		b.WriteString(" (" + strings.Join(extra, ", ") + ")")
	}
	return b.String()
}

func short(rev string) string {
	if len(rev) > 12 {
		return rev[:12]
	}
	return rev
}
