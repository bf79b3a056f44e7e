package hub

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/nudgehq/nudge"
	"github.com/nudgehq/nudge/store"
)

// The fleet's audit: every host sends its audit records, as its store keeps them (each with
// its seq, prev_hash and hash), to the hub, which checks each against the host's chain as
// it has it and keeps them in its stream NUDGE_AUDIT (nudge.audit.HOST), 90 days. A record
// that rewrites one the hub has is refused and logged; a host's history, once on the hub,
// can no longer be changed on the host unseen. `GET /v1/audit?host=H` on the hub reads the
// copy.

const (
	auditStream = "NUDGE_AUDIT"
	auditKeep   = 90 * 24 * time.Hour
	auditBatch  = 200 // records per request to the hub
)

func auditSubject(host string) string { return "nudge.audit." + host }

// Audit is this host's audit log (satisfied by *store.AuditLog).
type Audit interface {
	AuditHead() (seq uint64, hash string, err error)
	Audit(f store.AuditFilter) ([]nudge.AuditRecord, error)
}

// auditHead is a host's chain as the hub has it: its last record's seq and hash.
type auditHead struct {
	Seq  uint64
	Hash string
}

// relayAudit sends this host's audit records to the hub, from the one after the hub's
// last, as they are appended (its store's head is read every second: one read).
func (f *Fleet) relayAudit() {
	if f.deps.Audit == nil {
		return
	}
	var sent uint64
	known := false
	for f.ctx.Err() == nil {
		wait := time.Second
		if !known {
			h, err := f.api.auditHead(f.ctx)
			if err == nil {
				sent, known = h.Seq, true
			} else {
				wait = 2 * time.Second
			}
		}
		if known {
			if n, err := f.sendAudit(sent); err != nil {
				if f.ctx.Err() == nil {
					f.log.Debug("hub: audit records", "err", err)
				}
				known, wait = false, 2*time.Second // read the hub's head again
			} else if n > 0 {
				sent, wait = n, 0
			}
		}
		if wait > 0 {
			select {
			case <-f.ctx.Done():
			case <-time.After(wait):
			}
		}
	}
}

// sendAudit sends the records after seq after, up to a batch, and returns the last sent
// (0: none to send).
func (f *Fleet) sendAudit(after uint64) (uint64, error) {
	head, _, err := f.deps.Audit.AuditHead()
	if err != nil || head <= after {
		return 0, err
	}
	recs, err := f.deps.Audit.Audit(store.AuditFilter{AfterSeq: after, Limit: auditBatch})
	if err != nil || len(recs) == 0 {
		return 0, err
	}
	list := make([]json.RawMessage, 0, len(recs))
	for i := range recs {
		b, err := json.Marshal(&recs[i]) // the stored canonical form
		if err != nil {
			return 0, err
		}
		list = append(list, b)
	}
	if err := f.api.putAudit(f.ctx, list); err != nil {
		return 0, err
	}
	return recs[len(recs)-1].Seq, nil
}

// hubAuditHead is host's chain on the hub: from memory, else the stream's last record of
// the host (nothing: zero).
func (f *Fleet) hubAuditHead(ctx context.Context, host string) (auditHead, error) {
	f.mu.Lock()
	h, ok := f.auditHeads[host]
	f.mu.Unlock()
	if ok {
		return h, nil
	}
	st, err := f.js.Stream(ctx, auditStream)
	if err != nil {
		return auditHead{}, err
	}
	m, err := st.GetLastMsgForSubject(ctx, auditSubject(host))
	switch {
	case errors.Is(err, jetstream.ErrMsgNotFound):
	case err != nil:
		return auditHead{}, err
	default:
		var r nudge.AuditRecord
		if err := json.Unmarshal(m.Data, &r); err != nil {
			return auditHead{}, err
		}
		h = auditHead{Seq: r.Seq, Hash: r.Hash}
	}
	f.mu.Lock()
	if f.auditHeads == nil {
		f.auditHeads = map[string]auditHead{}
	}
	f.auditHeads[host] = h
	f.mu.Unlock()
	return h, nil
}

// keepAudit checks host's records against its chain on the hub and keeps them, in order.
// A record the hub has already is passed over (the hub keeps the one it has; one whose
// hash does not hold, or that is the hub's last with another hash, is refused); one that follows a gap
// (records sealed out of the host's store before they reached the hub) starts the chain
// again from itself, logged; one that rewrites a record the hub has, or breaks the chain
// after the hub's last, is refused with the rest of the batch.
func (f *Fleet) keepAudit(ctx context.Context, host string, list []json.RawMessage) error {
	f.auditMu.Lock() // one batch at a time: a member that sent again after a lost answer
	defer f.auditMu.Unlock()
	head, err := f.hubAuditHead(ctx, host)
	if err != nil {
		return err
	}
	for _, raw := range list {
		var r nudge.AuditRecord
		if err := json.Unmarshal(raw, &r); err != nil {
			return fmt.Errorf("an audit record of %s that does not read: %w", host, err)
		}
		prev := head.Hash
		switch {
		case r.Seq <= head.Seq:
			_, err := store.CheckAuditRecord(r.Seq, r.PrevHash, raw)
			if err != nil || r.Seq == head.Seq && r.Hash != head.Hash {
				f.log.Warn("hub: a host sent an audit record that rewrites one the hub keeps: refused", "host", host, "seq", r.Seq, "err", err)
				return fmt.Errorf("audit record %d of %s differs from the one the hub keeps: refused", r.Seq, host)
			}
			continue // sent again after a lost answer: the hub keeps the one it has
		case head.Seq != 0 && r.Seq > head.Seq+1:
			f.log.Warn("hub: a host's audit records resume after a gap (sealed out of its store before they reached the hub)", "host", host, "after", head.Seq, "from", r.Seq)
			prev = r.PrevHash
		case head.Seq == 0:
			prev = r.PrevHash // the first the hub has of this host
		}
		hash, err := store.CheckAuditRecord(r.Seq, prev, raw)
		if err != nil {
			f.log.Warn("hub: a host's audit record breaks its chain: refused", "host", host, "seq", r.Seq, "err", err)
			return fmt.Errorf("audit record %d of %s: %w", r.Seq, host, err)
		}
		if _, err := f.js.Publish(ctx, auditSubject(host), raw, jetstream.WithMsgID(host+"."+strconv.FormatUint(r.Seq, 10))); err != nil {
			return err
		}
		head = auditHead{Seq: r.Seq, Hash: hash}
		f.mu.Lock()
		f.auditHeads[host] = head
		f.mu.Unlock()
	}
	return nil
}

// auditOf reads host's records on the hub that pass flt (its time, trigger, runtime,
// workspace and event fields; Limit and Newest), oldest first.
func (f *Fleet) auditOf(ctx context.Context, host string, flt store.AuditFilter) ([]nudge.AuditRecord, error) {
	if f.srv == nil {
		return nil, nudge.NewError(nudge.BadRequest, "the audit records of other hosts are on the hub: ask the hub's daemon (host="+host+")")
	}
	if !validName.MatchString(host) {
		return nil, nudge.NewError(nudge.BadRequest, "host "+strconv.Quote(host)+": not a host name")
	}
	cons, err := f.js.OrderedConsumer(ctx, auditStream, jetstream.OrderedConsumerConfig{FilterSubjects: []string{auditSubject(host)}})
	if err != nil {
		return nil, err
	}
	info, err := f.js.Stream(ctx, auditStream)
	if err != nil {
		return nil, err
	}
	last, err := info.GetLastMsgForSubject(ctx, auditSubject(host))
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return []nudge.AuditRecord{}, nil
	}
	if err != nil {
		return nil, err
	}
	out := []nudge.AuditRecord{}
	for {
		m, err := cons.Next(jetstream.FetchMaxWait(2 * time.Second))
		if err != nil {
			return out, err
		}
		md, _ := m.Metadata()
		var r nudge.AuditRecord
		if json.Unmarshal(m.Data(), &r) == nil && flt.Match(&r) {
			out = append(out, r)
			if flt.Limit > 0 && !flt.Newest && len(out) == flt.Limit {
				return out, nil
			}
		}
		if md == nil || md.Sequence.Stream >= last.Sequence {
			break
		}
	}
	if flt.Limit > 0 && flt.Newest && len(out) > flt.Limit {
		out = out[len(out)-flt.Limit:]
	}
	return out, nil
}

// Audit reads this host's records, or with flt.Host another host's copy on the hub.
func (s fleetStore) Audit(flt store.AuditFilter) ([]nudge.AuditRecord, error) {
	if flt.Host == "" || flt.Host == s.f.cfg.HostName {
		return s.Store.Audit(flt)
	}
	ctx, cancel := context.WithTimeout(s.f.ctx, 30*time.Second)
	defer cancel()
	return s.f.auditOf(ctx, flt.Host, flt)
}
