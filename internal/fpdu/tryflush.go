package fpdu

// TryFlush sends as much of what is queued as the socket takes without
// blocking (one writev), and reports whether everything went out. What is
// left stays queued, in order, for a later TryFlush or Flush; payload
// pieces must stay unchanged until then. The receive side of an engine
// uses it to answer a Read or an atomic without waiting on a peer that is
// not reading, and a poster to send without a goroutine hand-off. Under
// the Responder's hold rule, or where the platform has no non-blocking
// write, it sends nothing and returns false.
func (w *Writer) TryFlush() (bool, error) {
	if w.err != nil {
		return false, w.err
	}
	if len(w.iov) == 0 {
		return true, nil
	}
	if w.hold {
		select {
		case <-w.c.hold:
			if w.c.closed.Load() {
				return false, nil // Flush reports it
			}
			w.hold = false
		default:
			return false, nil
		}
	}
	n, err := w.raw.writev(w.iov)
	if err != nil {
		w.err = err
		w.reset()
		return false, err
	}
	w.consume(n)
	if len(w.iov) == 0 {
		w.reset()
		return true, nil
	}
	return false, nil
}

// consume drops the first n queued octets.
func (w *Writer) consume(n int) {
	i := 0
	for i < len(w.iov) && n >= len(w.iov[i]) {
		n -= len(w.iov[i])
		w.iov[i] = nil
		i++
	}
	if i < len(w.iov) && n > 0 {
		w.iov[i] = w.iov[i][n:]
	}
	rest := copy(w.iov, w.iov[i:])
	clear(w.iov[rest:])
	w.iov = w.iov[:rest]
}
