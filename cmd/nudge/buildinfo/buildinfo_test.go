package buildinfo

import (
	"runtime/debug"
	"testing"
)

func TestFromBuildInfo(t *testing.T) {
	vcs := []debug.BuildSetting{{Key: "vcs.revision", Value: "0123456789abcdef0123"}, {Key: "vcs.modified", Value: "true"}}
	for _, tt := range []struct {
		name, override string
		bi             *debug.BuildInfo
		want           string
	}{
		{"no build info", "", nil, "dev"},
		{"a tagged module", "", &debug.BuildInfo{Main: debug.Module{Path: "m", Version: "v1.4.0"}}, "v1.4.0"},
		{"a work tree build", "", &debug.BuildInfo{Main: debug.Module{Path: "m", Version: "(devel)"}, Settings: vcs}, "devel+0123456789ab-dirty"},
		{"set at link time", "1.5.0-rc1", &debug.BuildInfo{Main: debug.Module{Path: "m", Version: "(devel)"}, Settings: vcs}, "1.5.0-rc1"},
	} {
		if got := FromBuildInfo(tt.override, tt.bi).Version; got != tt.want {
			t.Errorf("%s: version %q, want %q", tt.name, got, tt.want)
		}
	}
	in := FromBuildInfo("", &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Path: "m", Version: "(devel)"}, Settings: vcs})
	if s := in.String(); s != "nudge devel+0123456789ab-dirty (commit 0123456789ab with local changes, go1.26.8)" {
		t.Errorf("String: %q", s)
	}
}

// TestReadNotDev: a test binary carries build information, so Read never answers the
// bare placeholder "dev" with nothing else.
func TestReadNotDev(t *testing.T) {
	if in := Read(""); in.Module == "" || in.Go == "" {
		t.Errorf("Read: %+v", in)
	}
}
