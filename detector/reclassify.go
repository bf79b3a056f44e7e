package detector

// Reclassify forgets the runtime's last verdict and takes a fresh capture once its pane is
// quiet: the registry calls it (through the daemon) when a new program starts in the
// runtime's place, so the new program's screen is published even when it reads the same
// as the old one's last verdict (a restarted agent back at its composer). It never blocks.
func (m *Monitor) Reclassify(runtimeID string) {
	ps := m.get(runtimeID)
	if ps == nil {
		m.poke()
		return
	}
	ps.mu.Lock()
	ps.class = Classification{}
	ps.dialog = false
	ps.mu.Unlock()
	ps.outSeq.Add(1)
	signal(ps.outCh)
}
