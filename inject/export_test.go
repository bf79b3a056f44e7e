package inject

import (
	"context"

	"github.com/nudgehq/nudge"
)

// The pane looks are package functions an attempt uses; the tests written against the
// pipeline call them through these.

func (p *Pipeline) paneCheck(ctx context.Context, conn Sender, target string, l *lane) (verdict, bool, string, []string) {
	return paneCheck(ctx, conn, target, &l.paneWatch)
}

func (p *Pipeline) paneReplaced(ctx context.Context, conn Sender, target string, rt nudge.Runtime) (verdict, bool) {
	return paneReplaced(ctx, conn, target, rt)
}
