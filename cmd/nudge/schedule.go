package main

import (
	"net/http"
	"time"

	"github.com/nudgehq/nudge"
)

// scheduleBody is POST /v1/schedules.
type scheduleBody struct {
	Workspace string `json:"workspace"`
	Agent     string `json:"agent"`
	Prompt    string `json:"prompt"`
	Every     string `json:"every"`
}

func (d *daemon) handleListSchedules(w http.ResponseWriter, r *http.Request, c caller) {
	all, err := d.db.ListSchedules()
	if err != nil {
		writeError(w, err)
		return
	}
	out := []nudge.Schedule{}
	for _, s := range all {
		if c.Allow(verbRead, s.WorkspaceID) == nil {
			out = append(out, s)
		}
	}
	writeJSON(w, http.StatusOK, out)
}

func (d *daemon) handleAddSchedule(w http.ResponseWriter, r *http.Request, c caller) {
	var b scheduleBody
	if err := decodeJSON(w, r, &b); err != nil {
		writeError(w, err)
		return
	}
	if err := c.Allow(verbTrigger, b.Workspace); err != nil {
		writeError(w, err)
		return
	}
	every, err := time.ParseDuration(b.Every)
	if err != nil {
		writeError(w, badRequest("every: %v", err))
		return
	}
	s, err := d.sched.Add(b.Workspace, b.Agent, b.Prompt, every)
	if err != nil {
		writeError(w, err)
		return
	}
	d.auditCall(r, c, "api_schedule_add", "", s.WorkspaceID, s.ScheduleID)
	writeJSON(w, http.StatusCreated, s)
}

func (d *daemon) handleDeleteSchedule(w http.ResponseWriter, r *http.Request, c caller) {
	id := r.PathValue("id")
	all, err := d.db.ListSchedules()
	if err != nil {
		writeError(w, err)
		return
	}
	for _, s := range all {
		if s.ScheduleID != id {
			continue
		}
		if err := c.Allow(verbTrigger, s.WorkspaceID); err != nil {
			writeError(w, err)
			return
		}
		if err := d.sched.Remove(id); err != nil {
			writeError(w, err)
			return
		}
		d.auditCall(r, c, "api_schedule_remove", "", s.WorkspaceID, id)
		writeJSON(w, http.StatusOK, map[string]any{"schedule_id": id, "removed": true})
		return
	}
	writeError(w, &apiError{"NOT_FOUND", "no schedule " + id})
}
