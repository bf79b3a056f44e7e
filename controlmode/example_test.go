package controlmode_test

import (
	"context"
	"fmt"
	"time"

	"github.com/nudgehq/nudge/controlmode"
)

func ExampleDial() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := controlmode.Dial(ctx, controlmode.Config{
		SocketName:    "nudge",
		Session:       "agents_ws",
		CreateSession: true,
		OnOutput: func(pane int, data []byte, _ time.Duration) {
			// data is valid only during the call: copy what you keep.
		},
		OnEvent: func(ev controlmode.Event) {
			if p, ok := ev.(*controlmode.Pause); ok {
				_ = p.Pane // resync this pane with capture-pane (from another goroutine)
			}
		},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer c.Close()
	// Type text byte-exact, then Enter as its own key.
	if _, err := c.DoAll(ctx, controlmode.SendKeys("%0", "echo 'hi'; $HOME")...); err != nil {
		fmt.Println(err)
	}
	c.Do(ctx, "send-keys -t '%0' -H 0d")
}
