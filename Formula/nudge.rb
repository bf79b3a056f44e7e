# Homebrew formula for nudge, kept in the repository so the repository is its own tap:
#   brew tap nudgehq/nudge https://github.com/nudgehq/nudge && brew install nudgehq/nudge/nudge
# or, from a checkout: brew install --formula ./Formula/nudge.rb (--HEAD for main).
# A release bumps `tag` (and `revision`) below; the build is the static one of docs/binary.md.
class Nudge < Formula
  desc "Wake AI coding agents in tmux: prompts with receipts, dialogs and replies"
  homepage "https://github.com/nudgehq/nudge"
  url "https://github.com/nudgehq/nudge.git", tag: "v0.1.0"
  license "MIT"
  head "https://github.com/nudgehq/nudge.git", branch: "main"

  depends_on "go" => :build
  depends_on "tmux"

  def install
    ENV["CGO_ENABLED"] = "0"
    ENV["GOTOOLCHAIN"] = "auto" # go.mod may name a newer Go than Homebrew's
    v = build.head? ? "HEAD-#{Utils.git_short_head}" : "v#{version}"
    system "go", "build", *std_go_args(ldflags: "-s -w -X main.version=#{v}"), "./cmd/nudge"
    generate_completions_from_executable(bin/"nudge", "completion")
  end

  def caveats
    <<~EOS
      Start the daemon with `nudge serve`, or at login with `nudge service install`
      (a launchd agent that leaves your agents running when it restarts).
      Check the machine with `nudge doctor`.
    EOS
  end

  test do
    assert_match "nudge v#{version}", shell_output("#{bin}/nudge version")
    assert_match "tmux", shell_output("#{bin}/nudge --help")
  end
end
