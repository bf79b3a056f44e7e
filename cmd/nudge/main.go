// Command nudge is the nudge daemon and its CLI client.
package main

import (
	"fmt"
	"os"
)

func main() {
	fmt.Fprintln(os.Stderr, "nudge: under construction")
	os.Exit(1)
}
