// Package controlmode is a client for one persistent tmux control-mode connection
// (`tmux -u -C attach -t SESSION -f pause-after=N`) as tmux 3.2a–3.7c really behave.
// Dial reads the server's version into Caps (what differs between them) and refuses one
// older than MinVersion.
//
// The main types are:
//
//	Conn      one control client: Dial (or NewConn over a stream), Do/DoAll/Go,
//	          Subscribe, Close, Done/Err, Stats; Keep redials one with backoff
//	Config    how to reach tmux (binary, -L/-S, ssh host) and the callbacks for the stream
//	Caps      what the server supports, from its version: ParseVersion, Check, Degraded
//	Reply     the body of a %begin…%end block answering one of our commands
//	Event     a typed notification (*WindowAdd, *Pause, *SubscriptionChanged, …)
//	Reader    the line reader underneath: bufio.Reader.ReadSlice, reused buffer, capped lines
//
// and the pure, fuzzed helpers ParseLine, Escape, Unescape, Quote, QuoteText, SendKeys
// and IfPane (a command guarded by the pane's pid), and for remote hosts SSHArgv and
// ChildEnv (the environment a tmux or ssh child gets: none of nudge's own NUDGE_*).
//
// Safety: Quote makes any valid-UTF-8 string without \n, \r or NUL one tmux argument;
// SendKeys types any bytes through send-keys -l runs and -H hex; and a Conn refuses a
// command line that could yield other than exactly one reply block (ErrUnsafeCommand),
// so the FIFO of pending commands cannot drift and no text can run a second command.
//
// A Conn owns one tmux client process and one read goroutine. Commands are written one per
// line and matched FIFO against %begin…%end blocks whose flags field is 1; blocks with flags
// 0 (hooks, the initial attach) are delivered as *Unsolicited events. Pane output is decoded
// on the read goroutine into a reused buffer and handed to Config.OnOutput without
// allocating; every other line becomes an Event passed to Config.OnEvent.
//
// # Goroutines
//
// A Conn's read goroutine is started by Dial (or NewConn) and is the only goroutine the
// package starts; it runs OnOutput and OnEvent, which must not block and must not call
// Close. Close detaches (an empty line, then EOF on tmux's stdin), waits for the tmux
// process (exec.Cmd with WaitDelay) and for the read goroutine, closing tmux's stdout
// itself if a frozen server never does; it is idempotent, and the process that dialled
// calls it. Keep runs on its caller's goroutine: it dials, hands each new Conn to onConn,
// redials with backoff, and closes the last Conn when its context ends.
package controlmode
