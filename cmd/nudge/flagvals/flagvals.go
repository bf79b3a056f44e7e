// Package flagvals holds the values of command-line flags that pflag has no type for: a
// repeatable or comma-separated list, a rate ("10/min") and a list of durations.
package flagvals

import (
	"fmt"
	"strings"
	"time"

	"github.com/nudgehq/nudge/cmd/nudge/auth"
)

// List is a repeatable or comma-separated string flag.
type List struct{ V *[]string }

func (l List) String() string {
	if l.V == nil {
		return ""
	}
	return strings.Join(*l.V, ",")
}

func (l List) Type() string { return "list" }

func (l List) Set(s string) error {
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			*l.V = append(*l.V, p)
		}
	}
	return nil
}

// Rate parses "10/min", "5/30s", "100/h".
type Rate struct {
	N   *int
	Per *time.Duration
}

func (r Rate) String() string {
	if r.N == nil {
		return ""
	}
	unit := map[time.Duration]string{time.Second: "s", time.Minute: "min", time.Hour: "h"}[*r.Per]
	if unit == "" {
		unit = r.Per.String()
	}
	return fmt.Sprintf("%d/%s", *r.N, unit) // as it is written: 10/min
}

func (r Rate) Type() string { return "rate" }

func (r Rate) Set(s string) error {
	n, per, err := auth.ParseRate(s)
	if err != nil {
		return err
	}
	*r.N, *r.Per = n, per
	return nil
}

// Backoff parses "2s,4s".
type Backoff struct{ V *[]time.Duration }

func (b Backoff) String() string {
	if b.V == nil {
		return ""
	}
	var s []string
	for _, d := range *b.V {
		s = append(s, d.String())
	}
	return strings.Join(s, ",")
}

func (b Backoff) Type() string { return "durations" }

func (b Backoff) Set(s string) error {
	var out []time.Duration
	for _, p := range strings.Split(s, ",") {
		d, err := time.ParseDuration(strings.TrimSpace(p))
		if err != nil || d < 0 {
			return fmt.Errorf("bad backoff %q", p)
		}
		out = append(out, d)
	}
	*b.V = out
	return nil
}
