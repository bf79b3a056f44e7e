package inject

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/nudgehq/nudge"
)

// SchedulerConfig configures periodic prompts (seed 004).
type SchedulerConfig struct {
	// MinGap is the least time between two scheduled prompts to one agent (seed 004:
	// "max 1 prompt per 5 minutes per project"); 0 means 5m.
	MinGap time.Duration
	// MinEvery is the shortest period a schedule may have; 0 means 1m.
	MinEvery time.Duration
}

// DefaultSchedulerConfig returns the seed 004 defaults: 5m between two scheduled prompts
// to one agent, schedules no more often than every minute.
func DefaultSchedulerConfig() SchedulerConfig {
	return SchedulerConfig{MinGap: 5 * time.Minute, MinEvery: time.Minute}
}

// Scheduler turns schedules into triggers. Due schedules of one agent are batched into
// one prompt; a round is skipped while the agent is busy or needs confirmation, or when
// the agent got a scheduled prompt less than MinGap ago. It owns one goroutine, started
// by NewScheduler and stopped and joined by Close (or by the pipeline's Close).
type Scheduler struct {
	p      *Pipeline
	cfg    SchedulerConfig
	wake   chan struct{}
	ctx    context.Context // ends on Close or the pipeline's Close
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu   sync.Mutex
	last map[string]time.Time // agent key -> last scheduled trigger
}

// NewScheduler starts the scheduler of p. The caller owns it and calls Close; it also
// stops (without being joined) when p closes.
func NewScheduler(p *Pipeline, cfg SchedulerConfig) *Scheduler {
	if cfg.MinGap == 0 {
		cfg.MinGap = 5 * time.Minute
	}
	if cfg.MinEvery == 0 {
		cfg.MinEvery = time.Minute
	}
	s := &Scheduler{p: p, cfg: cfg, wake: make(chan struct{}, 1), last: map[string]time.Time{}}
	s.ctx, s.cancel = context.WithCancel(p.ctx)
	s.wg.Add(1)
	go s.loop()
	return s
}

// Close stops the scheduler's goroutine and waits for it (a trigger it is submitting is
// given up). It is idempotent. Schedules stay in the store.
func (s *Scheduler) Close() error {
	s.cancel()
	s.wg.Wait()
	return nil
}

// Add stores a new schedule and returns it.
func (s *Scheduler) Add(ws, agent, prompt string, every time.Duration) (nudge.Schedule, error) {
	if ws == "" || agent == "" {
		return nudge.Schedule{}, nudge.NewError(nudge.BadRequest, "workspace and agent are required")
	}
	if every < s.cfg.MinEvery {
		return nudge.Schedule{}, nudge.NewError(nudge.BadRequest, fmt.Sprintf("every must be at least %s", s.cfg.MinEvery))
	}
	text, err := Sanitize(prompt, s.p.cfg.MaxPrompt)
	if err != nil {
		return nudge.Schedule{}, err
	}
	now := s.p.cfg.Now()
	var b [4]byte
	_, _ = rand.Read(b[:])
	sc := nudge.Schedule{ScheduleID: "sch_" + hex.EncodeToString(b[:]), WorkspaceID: ws, Agent: agent,
		Prompt: text, Every: every, NextAt: now.Add(every), CreatedAt: now}
	if err := s.p.deps.Store.Schedules().PutSchedule(sc); err != nil {
		return nudge.Schedule{}, err
	}
	s.audit("schedule_added", sc, "")
	s.kick()
	return sc, nil
}

// Remove deletes a schedule.
func (s *Scheduler) Remove(id string) error {
	if err := s.p.deps.Store.Schedules().DeleteSchedule(id); err != nil {
		return err
	}
	s.audit("schedule_removed", nudge.Schedule{ScheduleID: id}, "")
	s.kick()
	return nil
}

func (s *Scheduler) kick() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

func (s *Scheduler) loop() {
	defer s.wg.Done()
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		next := s.runDue()
		resetTimer(timer, next)
		select {
		case <-s.ctx.Done():
			return
		case <-s.wake:
		case <-timer.C:
		}
	}
}

// runDue fires every due schedule and returns the wait until the next one. Schedules of
// an agent that are due soon (within batchWindow) join a batch that is due now.
func (s *Scheduler) runDue() time.Duration {
	all, err := s.p.deps.Store.Schedules().ListSchedules()
	if err != nil {
		s.p.log.Error("list schedules", "err", err)
		return time.Minute
	}
	now := s.p.cfg.Now()
	due := map[string][]nudge.Schedule{}
	s.mu.Lock()
	for _, sc := range all {
		// The gap counts from the last scheduled prompt the store knows of, so it holds
		// across a restart of the daemon too.
		if k := agentKey(sc); sc.LastAt.After(s.last[k]) {
			s.last[k] = sc.LastAt
		}
	}
	s.mu.Unlock()
	for _, sc := range all {
		if !sc.NextAt.After(now) {
			due[agentKey(sc)] = append(due[agentKey(sc)], sc)
		}
	}
	next := time.Hour
	for _, sc := range all {
		switch {
		case !sc.NextAt.After(now):
		case due[agentKey(sc)] != nil && sc.NextAt.Sub(now) <= batchWindow(sc):
			due[agentKey(sc)] = append(due[agentKey(sc)], sc)
		default:
			next = min(next, sc.NextAt.Sub(now))
		}
	}
	for _, batch := range due {
		s.fire(batch, now)
		next = min(next, batch[0].Every)
	}
	return max(next, time.Millisecond)
}

func agentKey(sc nudge.Schedule) string { return sc.WorkspaceID + "/" + sc.Agent }

// batchWindow is how early a schedule may fire to join another of its agent's: half its
// period, at most 30 s.
func batchWindow(sc nudge.Schedule) time.Duration { return min(sc.Every/2, 30*time.Second) }

// fire sends one batched trigger for an agent's due schedules, or skips the round.
func (s *Scheduler) fire(batch []nudge.Schedule, now time.Time) {
	sort.Slice(batch, func(i, j int) bool { return batch[i].ScheduleID < batch[j].ScheduleID })
	first := batch[0]
	key := agentKey(first)
	if why := s.skip(first, key, now); why != "" {
		for _, sc := range batch {
			s.advance(sc, now, false)
			s.audit("schedule_skipped", sc, why)
		}
		return
	}
	var ids, prompts []string
	for _, sc := range batch {
		ids = append(ids, sc.ScheduleID)
		prompts = append(prompts, sc.Prompt)
		s.advance(sc, now, true)
	}
	s.mu.Lock()
	s.last[key] = now
	s.mu.Unlock()
	req := Request{
		TriggerID: fmt.Sprintf("sch_%d_%s", now.Unix(), strings.TrimPrefix(first.ScheduleID, "sch_")),
		Workspace: first.WorkspaceID, Agent: first.Agent, ThreadID: "schedule",
		Prompt: strings.Join(prompts, "\n"), Reason: "scheduled", Caller: "scheduler",
		ScheduleID: strings.Join(ids, ","),
	}
	if _, err := s.p.Submit(s.ctx, req); err != nil {
		s.p.log.Warn("scheduled trigger", "schedule_id", req.ScheduleID, "err", err)
	}
}

// skip says why this round is skipped, or "".
func (s *Scheduler) skip(sc nudge.Schedule, key string, now time.Time) string {
	s.mu.Lock()
	last := s.last[key]
	s.mu.Unlock()
	if !last.IsZero() && now.Sub(last) < s.cfg.MinGap {
		return "rate limited: a scheduled prompt went to this agent " + now.Sub(last).Round(time.Second).String() + " ago"
	}
	rt, ok := s.p.deps.Runtimes.Lookup(sc.WorkspaceID, sc.Agent)
	if !ok {
		return "no runtime " + key
	}
	if s.p.Depth(rt.RuntimeID) > 0 {
		return "triggers already queued for the agent"
	}
	if s.p.deps.Gates != nil {
		switch r := s.p.deps.Gates.Readiness(rt); r {
		case nudge.Busy, nudge.NeedsConfirmation:
			return "agent is " + string(r)
		}
	}
	return ""
}

func (s *Scheduler) advance(sc nudge.Schedule, now time.Time, fired bool) {
	for !sc.NextAt.After(now.Add(batchWindow(sc))) { // one joining early moves on too
		sc.NextAt = sc.NextAt.Add(sc.Every)
	}
	if fired {
		sc.LastAt = now
	}
	if err := s.p.deps.Store.Schedules().PutSchedule(sc); err != nil {
		s.p.log.Error("update schedule", "schedule_id", sc.ScheduleID, "err", err)
	}
}

func (s *Scheduler) audit(event string, sc nudge.Schedule, reason string) {
	rec := nudge.AuditRecord{Event: event, Workspace: sc.WorkspaceID, Reason: reason,
		Detail: mustJSON(map[string]any{"schedule_id": sc.ScheduleID, "agent": sc.Agent, "every": sc.Every.String()})}
	if _, err := s.p.deps.Store.AuditLog().AppendAudit(rec); err != nil {
		s.p.log.Error("audit schedule", "err", err)
	}
}
