//go:build windows

package nudge

// Native Windows is not supported yet: nudge drives tmux, which runs on Windows only
// inside WSL, over Unix sockets, signals and process groups; a native backend (ConPTY)
// is later work. Install and run nudge inside WSL 2 (docs/platforms.md). The name
// below is undefined on purpose, so that `go build` and `go install` say so.
var _ = nudge_runs_on_Windows_inside_WSL_see_docs_platforms_md
