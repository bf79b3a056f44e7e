package inject

import (
	"fmt"
	"time"

	"github.com/nudgehq/nudge"
)

// A person at the pane (typing, a draft in the composer, copy mode) holds a trigger
// (OPERATOR_BUSY). Seed 000 §13.2: the trigger stays deferred and queued, and resumes on
// its own once the quiet window is met; §12 and seed 001 §6.6: past the max defer window
// (DEFER_TIMEOUT) a collision event goes out. nudge then keeps holding the trigger for
// the person instead of starting a second agent beside their pane (a second paid session
// on the same work that lingered until someone deregistered it): the event says so, the
// receipt stays deferred, and the trigger is typed into the pane as soon as the person
// stops. A person still at the pane MaxHold after the event ends it failed with
// DEFER_TIMEOUT (result timeout): nothing was typed and no agent was started, and the
// orchestrator decides what comes next.

// Collision is the collision event of a trigger held for a person past the max defer
// window (nudge.Collision).
type Collision = nudge.Collision

// operatorHold is the verdict for a trigger a person has held since since, at now past
// the max defer window: held on (the collision reported once) until MaxHold after the
// window, then failed with DEFER_TIMEOUT. until is when the person may be done (zero:
// unknown).
func (ls *lanes) operatorHold(j *job, runtimeID string, since, until, now time.Time, why string) verdict {
	end := since.Add(ls.cfg.MaxDefer + ls.cfg.MaxHold)
	if !now.Before(end) {
		return verdict{kind: fail, code: nudge.DeferTimeout, why: fmt.Sprintf(
			"operator busy past the max defer window (%s) and the max hold after it (%s): %s; nothing was typed and no agent was started beside their pane",
			ls.cfg.MaxDefer, ls.cfg.MaxHold, why)}
	}
	if !j.collided {
		j.collided = true
		ls.fin.collided(j, Collision{TriggerID: j.id(), ThreadID: j.record().ThreadID, RuntimeID: runtimeID,
			Code: nudge.DeferTimeout, Operator: why, Since: since, HeldUntil: end})
	}
	if until.IsZero() || until.After(end) {
		until = end
	}
	return verdict{kind: hold, code: nudge.OperatorBusy, until: until,
		why: fmt.Sprintf("held for the operator past the max defer window (%s; collision reported): %s", ls.cfg.MaxDefer, why)}
}

// collided audits and publishes j's collision event.
func (f *finisher) collided(j *job, c Collision) {
	rec := j.record()
	a := f.auditDetail("trigger_collision", rec, c.Operator, c)
	a.Code = nudge.DeferTimeout
	f.persist(j, a)
	nudge.Publish(f.deps.Bus, nudge.CollisionHeld{Trigger: rec, Collision: c})
}
