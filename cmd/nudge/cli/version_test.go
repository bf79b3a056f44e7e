package cli

import (
	"encoding/json"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nudgehq/nudge/cmd/nudge/api"
)

// nudgeVersion runs `bin version -o json` and returns the version it names.
func nudgeVersion(t *testing.T, bin string) string {
	t.Helper()
	out, err := exec.Command(bin, "version", "-o", "json").Output()
	if err != nil {
		t.Fatalf("%s version: %v", bin, err)
	}
	var in struct{ Version string }
	if err := json.Unmarshal(out, &in); err != nil {
		t.Fatalf("version -o json: %q: %v", out, err)
	}
	return in.Version
}

// TestVersionStampedAtLinkTime: the version a release sets with -ldflags -X (as
// .goreleaser.yaml and .ci/install do from the tag) is what `nudge version` prints, in a
// static, stripped build like the released one.
func TestVersionStampedAtLinkTime(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "nudge")
	cmd := exec.Command("go", "build", "-trimpath", "-ldflags", "-s -w -X main.version=v9.8.7-test", "-o", bin, "..")
	cmd.Env = append(cmd.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	if v := nudgeVersion(t, bin); v != "v9.8.7-test" {
		t.Errorf("version %q, want the one set at link time", v)
	}
	out, err := exec.Command(bin, "version").Output()
	if err != nil || !strings.HasPrefix(string(out), "nudge v9.8.7-test") {
		t.Errorf("nudge version: %q %v", out, err)
	}
	// The daemon says the same: /v1/health (and the log, the web view) carry it.
	cd := newChaosDaemon(t, bin)
	cd.start()
	var h api.Health
	if err := cd.call("GET", "/v1/health", nil, &h); err != nil || h.Version != "v9.8.7-test" {
		t.Errorf("the daemon's /v1/health version %q (%v), want the one set at link time", h.Version, err)
	}
}

// TestVersionFallsBackToBuildInfo: without -X the version is the main module's version Go
// stamped into the binary (a tag, or a pseudo-version naming the commit; `go install
// ...@vX` sets the tag), else devel+COMMIT from the VCS stamp; never the bare "dev".
func TestVersionFallsBackToBuildInfo(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "nudge")
	if out, err := exec.Command("go", "build", "-o", bin, "..").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	v := nudgeVersion(t, bin)
	out, err := exec.Command("go", "version", "-m", bin).Output()
	if err != nil {
		t.Fatal(err)
	}
	var modVersion string
	for _, line := range strings.Split(string(out), "\n") {
		if f := strings.Fields(line); len(f) >= 3 && f[0] == "mod" {
			modVersion = f[2]
		}
	}
	switch {
	case modVersion != "" && modVersion != "(devel)":
		if v != modVersion {
			t.Errorf("version %q, want the module version %q", v, modVersion)
		}
	case !strings.HasPrefix(v, "devel+") && v != "dev":
		t.Errorf("version %q: neither the module version nor devel+COMMIT", v)
	}
	if v == "" {
		t.Error("no version")
	}
}
