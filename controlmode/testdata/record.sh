#!/usr/bin/env bash
# Records control-mode transcripts from the installed tmux (3.3a when these were made).
# Usage: testdata/record.sh (from the controlmode directory). Each scenario runs on its own
# private server and writes NAME.txt: "> " lines are what the client sent (all sent in one
# write before any output was read), "< " lines are what tmux wrote, verbatim.
set -euo pipefail
cd "$(dirname "$0")"
n=0
sock=nudge-rec-$$-0
trap 'tmux -L "$sock" kill-server 2>/dev/null || true; rm -f "${TMUX_TMPDIR:-/tmp}/tmux-$(id -u)"/nudge-rec-$$-*' EXIT

# record NAME SECONDS ATTACH-FLAGS CMD... : attaches to session s and sends the commands.
record() {
	local name=$1 secs=$2 flags=$3
	shift 3
	{
		echo "# recorded from $(tmux -V) by testdata/record.sh"
		for c in "$@"; do echo "> $c"; done
		{ for c in "$@"; do printf '%s\n' "$c"; done; sleep "$secs"; } |
			tmux -L "$sock" -u -C attach -t =s $flags | sed 's/^/< /'
	} >"$name.txt"
	tmux -L "$sock" kill-server 2>/dev/null || true
}

# new starts a fresh private server with session s running "$@".
new() {
	n=$((n + 1))
	sock=nudge-rec-$$-$n
	tmux -L "$sock" -f /dev/null new-session -d -s s -x 80 -y 24 "$@"
}

new 'sleep 30'
record block-notification 0.5 "-f pause-after=5" \
	"refresh-client -A '%0:pause'" "refresh-client -A '%0:continue'" "display -p after"

new 'sleep 30'
record parse-error 0.5 "" \
	"foo-bar" "display -p \"unterminated" "list-panes -F '%end #{pane_id}'" "display -p last"

new 'sleep 30'
tmux -L "$sock" set-hook -g after-new-window 'display -p HOOKOUT'
record hook-block 0.5 "" "display -p first" "new-window -d" "display -p second"

# 8-bit bytes, then enough multi-byte UTF-8 that tmux cuts lines inside characters.
tmp=$(mktemp -d)
printf 'A\tB\\C\033[1mD\177E\303\251 F\001\n' >"$tmp/8bit"
for i in $(seq 0 255); do printf "\\$(printf %03o "$i")"; done >>"$tmp/8bit"
for i in $(seq 1 400); do printf '日本語のテキスト%03d é ü 😀 ' "$i"; done >"$tmp/utf8"
new "sleep 0.3; cat $tmp/8bit; sleep 30"
record output-8bit 1.2 "" "display -p ready"
new "sleep 0.3; cat $tmp/utf8; sleep 30"
record output-utf8 1.5 "-f pause-after=5" "display -p ready"
cp "$tmp/8bit" output-8bit.bin
cp "$tmp/utf8" output-utf8.bin
rm -rf "$tmp"

new 'sleep 30'
{ echo "# recorded from $(tmux -V): attach -t =nosuch"; echo "> display -p never";
  { echo "display -p never"; sleep 0.3; } | tmux -L "$sock" -u -C attach -t =nosuch | sed 's/^/< /'; } >no-session.txt || true

new 'sleep 30'
record window-names 2.5 "" \
	"rename-window 'tab	x\\y'" "new-window -n 'two words' 'sleep 30'" "rename-session 'sé ss'" \
	"refresh-client -B 'sub:%*:#{pane_id}:#{pane_dead}'" "display -p done"
