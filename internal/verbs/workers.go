package verbs

import "sync"

// workers are a Device's goroutines for the work its poller must not do:
// a busy connection's reading and a full socket's transmitting. A job
// goes to a worker parked waiting for one, or to a new worker when none
// is; a worker that finished waits for the next job (no timer), so a
// steady stream of bursts reuses them and allocates nothing. Their number
// is the peak of jobs at once, not the number of QPs. Close ends the idle
// ones and makes the busy ones end after their job.
type workers struct {
	jobs   chan func() // unbuffered: a send succeeds only to a parked worker
	closed chan struct{}
	once   sync.Once
}

func newWorkers() *workers {
	return &workers{jobs: make(chan func()), closed: make(chan struct{})}
}

// run runs f on a worker. f should be a func value made once (a method
// value bound at the QP's creation): a new closure would allocate.
func (w *workers) run(f func()) {
	select {
	case w.jobs <- f:
	default:
		go w.work(f)
	}
}

// work is a worker: it runs f, then the jobs it is given, until Close.
func (w *workers) work(f func()) {
	for {
		f()
		select {
		case f = <-w.jobs:
		case <-w.closed:
			return
		}
	}
}

// close ends the workers.
func (w *workers) close() { w.once.Do(func() { close(w.closed) }) }
