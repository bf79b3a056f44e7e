//go:build nohubserver

package hub

import (
	"errors"

	"github.com/hashicorp/go-hclog"
	"github.com/nats-io/nats.go"
)

// A build with -tags nohubserver leaves the NATS server out (docs/binary.md has what it
// saves): such a daemon joins a hub (--hub) but cannot be one (--hub-listen).
type embedded struct{ admin string }

func startServer(Config, string, hclog.Logger) (*embedded, []identity, error) {
	return nil, nil, errors.New("--hub-listen: this nudge was built without the hub's server (-tags nohubserver): join a hub with --hub")
}

func (e *embedded) inProcess() nats.InProcessConnProvider { return nil }
func (e *embedded) Addr() string                          { return "" }
func (e *embedded) close()                                {}
func (e *embedded) reload(string, []identity, hclog.Logger) error {
	return errors.New("built without the hub's server")
}
