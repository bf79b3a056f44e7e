package act

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"rsc.io/qr"

	"github.com/nudgehq/nudge/cmd/nudge/api"
	"github.com/nudgehq/nudge/cmd/nudge/flagvals"
	"github.com/nudgehq/nudge/cmd/nudge/tui"
	"github.com/nudgehq/nudge/cmd/nudge/web"
)

// WebCommand is `nudge web pair`.
func WebCommand(cli CLI) *cobra.Command {
	return cli.Group("web", "the web view (serve --web ADDR): pair a browser", webPair(cli))
}

func webPair(cli CLI) *cobra.Command {
	var b api.WebPairRequest
	cmd := &cobra.Command{
		Use:   "pair [--scope read|answer|trigger|operate|type] [--name NAME] [--workspace WS] [--ttl 720h]",
		Short: "print a one-time link (and its QR code) that pairs a browser with the web view",
		Long: "Print a link that, opened once within 10 minutes, gives that browser a device token (subject\n" +
			"web:NAME) with the scope asked for: read (see only), answer (and answer dialogs), trigger (and\n" +
			"send prompts) or operate (and pause and resume). It is listed and revoked with `nudge token`.\n" +
			"The code is in the link's fragment (never sent to a server, never in a log) and leaves the\n" +
			"address bar when the page opens.",
		Example: "  nudge web pair --scope answer --name phone\n  nudge token ls; nudge token revoke ID",
		Args:    cli.Args(0, "no arguments"),
	}
	client := cli.WithClient(cmd)
	asJSONf := cli.Output(cmd, "table")
	cmd.Flags().StringVar(&b.Scope, "scope", "read", "what the browser may do: read, answer, trigger, operate or type")
	cmd.Flags().StringVar(&b.Name, "name", "browser", "the device's name (its token's subject is web:NAME)")
	cmd.Flags().Var(flagvals.List{V: &b.Workspaces}, "workspace", "workspaces it may see (repeatable; default: all yours)")
	cmd.Flags().StringVar(&b.TTL, "ttl", web.DefaultDeviceTTL.String(), "the device token's lifetime")
	noQR := cmd.Flags().Bool("no-qr", false, "print the link only")
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		asJSON, err := asJSONf()
		if err != nil {
			return err
		}
		ctx, cancel := context.WithTimeout(cmd.Context(), 30*time.Second)
		defer cancel()
		c := client()
		defer c.Close()
		p, err := c.WebPair(ctx, b)
		if err != nil {
			return err
		}
		if asJSON {
			return tui.PrintJSON(cli.Stdout, p)
		}
		fmt.Fprintln(cli.Stdout, p.URL)
		if !*noQR {
			fmt.Fprint(cli.Stdout, qrText(p.URL))
		}
		fmt.Fprintf(cli.Stderr, "opens once, until %s: a device token %s with verbs %s on workspaces %s for %s\n",
			p.ExpiresAt.Local().Format(time.Kitchen), p.Subject, strings.Join(p.Verbs, ","), strings.Join(p.Workspaces, ","), p.TTL)
		return nil
	}
	return cmd
}

// qrText draws link as a QR code for a terminal: two modules a character with half
// blocks, light modules drawn (a terminal's background is usually dark) inside a quiet
// zone of two. "" when the link does not fit a QR code.
func qrText(link string) string {
	c, err := qr.Encode(link, qr.L)
	if err != nil {
		return ""
	}
	const quiet = 2
	light := func(x, y int) bool { return !c.Black(x, y) } // outside the code is light too
	var b strings.Builder
	for y := -quiet; y < c.Size+quiet; y += 2 {
		for x := -quiet; x < c.Size+quiet; x++ {
			top, bottom := light(x, y), light(x, y+1) && y+1 < c.Size+quiet
			switch {
			case top && bottom:
				b.WriteString("█")
			case top:
				b.WriteString("▀")
			case bottom:
				b.WriteString("▄")
			default:
				b.WriteByte(' ')
			}
		}
		b.WriteByte('\n')
	}
	return b.String()
}
