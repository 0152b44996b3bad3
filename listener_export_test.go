package iwarp

// ListenerCounts returns l's connections counted against MaxConnections
// and, of them, those in startup: for the tests of package iwarp_test.
func ListenerCounts(l *Listener) (open, startups int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return int(l.open.Load()), l.startups.Len()
}
