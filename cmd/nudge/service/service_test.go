package service

import (
	"context"
	"encoding/xml"
	"strings"
	"testing"
)

func TestUnits(t *testing.T) {
	s := Spec{Binary: "/opt/nudge bin/nudge", ServeArgs: []string{"--root", "/src/a b", "--quiet-window", "10s"}, Path: "/usr/bin:/bin", LogDir: "/home/u/Library/Logs"}
	u, err := Unit("linux", s)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`ExecStart="/opt/nudge bin/nudge" serve --root "/src/a b" --quiet-window 10s`, "Restart=on-failure",
		"Environment=PATH=/usr/bin:/bin", "WantedBy=default.target", "EnvironmentFile=-%h/.config/nudge/service.env"} {
		if !strings.Contains(u, want) {
			t.Errorf("systemd unit lacks %q:\n%s", want, u)
		}
	}
	// The agents outlive a restart: only the daemon is killed, never the tmux server
	// in its cgroup (systemd's default control-group kill mode ends every pane).
	if strings.Count(u, "KillMode=") != 1 || !strings.Contains(u, "\nKillMode=process\n") {
		t.Errorf("systemd unit must set KillMode=process once:\n%s", u)
	}
	p, err := Unit("darwin", s)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Strings []string `xml:"dict>array>string"`
	}
	if err := xml.Unmarshal([]byte(p), &doc); err != nil {
		t.Fatalf("plist: %v\n%s", err, p)
	}
	if got := strings.Join(doc.Strings, "|"); got != "/opt/nudge bin/nudge|serve|--root|/src/a b|--quiet-window|10s" {
		t.Errorf("ProgramArguments %q", got)
	}
	for _, want := range []string{"<key>RunAtLoad</key><true/>", "<key>SuccessfulExit</key><false/>", "/home/u/Library/Logs/nudge.log",
		"<key>AbandonProcessGroup</key><true/>"} {
		if !strings.Contains(p, want) {
			t.Errorf("plist lacks %q", want)
		}
	}
	if _, err := Unit("plan9", s); err == nil {
		t.Error("plan9 unit")
	}
	for _, bad := range []Spec{{Binary: "nudge"}, {Binary: "/n", ServeArgs: []string{"--api-token", "x"}}, {Binary: "/n", ServeArgs: []string{"--api-token=x"}}} {
		if _, err := Unit("linux", bad); err == nil {
			t.Errorf("%+v accepted", bad)
		}
	}
	if q := systemdQuote("50%$HOME"); q != "50%%$$HOME" {
		t.Errorf("quote %q", q)
	}
}

func TestManagerCommands(t *testing.T) {
	var ran []string
	m := Manager{GOOS: "linux", UID: 501, Run: func(_ context.Context, argv ...string) (string, error) {
		ran = append(ran, strings.Join(argv, " "))
		return "", nil
	}}
	m.Start(context.Background(), "/f")
	m.Stop(context.Background())
	m.GOOS = "darwin"
	m.Start(context.Background(), "/p.plist")
	m.Stop(context.Background())
	want := []string{"systemctl --user daemon-reload", "systemctl --user enable nudge.service", "systemctl --user restart nudge.service",
		"systemctl --user disable --now nudge.service", "launchctl bootout gui/501/dev.nudge.serve", "launchctl bootstrap gui/501 /p.plist",
		"launchctl bootout gui/501/dev.nudge.serve"}
	if strings.Join(ran, "\n") != strings.Join(want, "\n") {
		t.Errorf("ran:\n%s\nwant:\n%s", strings.Join(ran, "\n"), strings.Join(want, "\n"))
	}
}
