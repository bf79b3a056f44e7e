package inject

import "github.com/nudgehq/nudge"

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

// collided audits and publishes j's collision event.
func (p *Pipeline) collided(j *job, c Collision) {
	rec := j.record()
	a := p.auditDetail("trigger_collision", rec, c.Operator, c)
	a.Code = nudge.DeferTimeout
	p.persist(j, a)
	nudge.Publish(p.deps.Bus, nudge.CollisionHeld{Trigger: rec, Collision: c})
}
