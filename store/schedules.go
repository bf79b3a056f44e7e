package store

import (
	"fmt"
	"sort"

	"github.com/nudgehq/nudge"
	bolt "go.etcd.io/bbolt"
)

// Schedules is the store's schedules (nudge.Schedule, keyed by ScheduleID). Its state
// lives in the file. Reached as part of a DB (its methods are the DB's).
type Schedules struct{ db *DB }

// PutSchedule creates or replaces the schedule s.ScheduleID. A zero CreatedAt is set to
// now.
func (ss *Schedules) PutSchedule(s nudge.Schedule) error {
	if err := need("schedule id", s.ScheduleID); err != nil {
		return fmt.Errorf("put schedule: %w", err)
	}
	if s.CreatedAt.IsZero() {
		s.CreatedAt = ss.db.now()
	}
	return ss.db.update("put schedule "+s.ScheduleID, func(tx *bolt.Tx) error {
		return putJSON(tx.Bucket(bucketSchedules), []byte(s.ScheduleID), s)
	})
}

// ListSchedules returns every schedule, the next due first (NextAt, then ScheduleID).
func (ss *Schedules) ListSchedules() ([]nudge.Schedule, error) {
	var out []nudge.Schedule
	err := ss.db.view("list schedules", func(tx *bolt.Tx) error {
		return forEachJSON(tx.Bucket(bucketSchedules), func(s nudge.Schedule) { out = append(out, s) })
	})
	sort.SliceStable(out, func(i, j int) bool {
		if !out[i].NextAt.Equal(out[j].NextAt) {
			return out[i].NextAt.Before(out[j].NextAt)
		}
		return out[i].ScheduleID < out[j].ScheduleID
	})
	return out, err
}

// DeleteSchedule removes the schedule id, or returns ErrNotFound.
func (ss *Schedules) DeleteSchedule(id string) error {
	return ss.db.update("delete schedule "+id, func(tx *bolt.Tx) error {
		return deleteKey(tx.Bucket(bucketSchedules), []byte(id))
	})
}
