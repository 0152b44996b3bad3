package rdmap

import "errors"

// The simulated network of the deterministic simulation (sim_test.go): one
// bounded byte pipe per direction of a TCP connection. A pipe does nothing
// random itself; the simulation decides how many octets each write and read
// moves (down to one) and how many steps each write is delayed, from its
// seeded generator, so a seed replays bit for bit.

// errSimReset is what a reader or writer sees after the other end closed
// with input it had not read (TCP answers that with a reset).
var errSimReset = errors.New("simulated connection reset by peer")

// simPipe is one direction of a simulated TCP connection: a FIFO of octets
// bounded by capacity (the socket buffers of both ends together), each
// octet readable from the step its write is delivered at. Delivery keeps
// the stream's order: a write is never delivered before an earlier one.
type simPipe struct {
	capacity int
	data     []byte // data[head:] is queued
	head     int
	arrivals []simArrival // delivery step of the queued octets, in order
	written  uint64       // octets accepted since the start
	read     uint64       // octets read since the start

	eof    bool  // the writer closed: EOF after the last queued octet
	eofErr error // nil: a FIN; else what the reader gets instead (a reset)
	eofAt  int64 // the step the EOF is delivered at
	// discard: the reader closed; octets written are dropped, and they
	// make the next write fail (TCP answers them with a reset).
	discard bool
	// reset: writes fail from now on.
	reset bool
}

// simArrival says that the octets before stream offset end are delivered
// at step at.
type simArrival struct {
	end uint64
	at  int64
}

func newSimPipe(capacity int) *simPipe {
	return &simPipe{capacity: capacity}
}

// queued is the number of octets written and not yet read.
func (p *simPipe) queued() int { return len(p.data) - p.head }

// room is how many octets a write may add now.
func (p *simPipe) room() int {
	if p.discard {
		return p.capacity
	}
	return p.capacity - p.queued()
}

// lastAt is the delivery step of the newest queued octet (or of nothing).
func (p *simPipe) lastAt() int64 {
	if len(p.arrivals) == 0 {
		return 0
	}
	return p.arrivals[len(p.arrivals)-1].at
}

// write queues up to room() octets of b, delivered at step now+delay (or
// later, behind earlier writes), and returns how many it took; after the
// reader closed it fails with errSimReset. A write after closeWrite
// panics: the simulation never does that.
func (p *simPipe) write(b []byte, now, delay int64) (int, error) {
	if p.reset {
		return 0, errSimReset
	}
	if p.eof {
		panic("simulation: write after close")
	}
	n := min(len(b), p.room())
	if n <= 0 {
		return 0, nil
	}
	p.written += uint64(n)
	if p.discard {
		p.reset = true
		return n, nil
	}
	if p.head > 0 && p.head >= len(p.data)/2 {
		k := copy(p.data, p.data[p.head:])
		p.data = p.data[:k]
		p.head = 0
	}
	p.data = append(p.data, b[:n]...)
	at := max(now+delay, p.lastAt())
	if k := len(p.arrivals); k > 0 && p.arrivals[k-1].at == at {
		p.arrivals[k-1].end = p.written
	} else {
		p.arrivals = append(p.arrivals, simArrival{end: p.written, at: at})
	}
	return n, nil
}

// readable is the number of queued octets delivered by step now.
func (p *simPipe) readable(now int64) int {
	end := p.read
	for _, a := range p.arrivals {
		if a.at > now {
			break
		}
		end = a.end
	}
	return int(end - p.read)
}

// readInto moves up to len(dst) delivered octets into dst.
func (p *simPipe) readInto(dst []byte, now int64) int {
	n := min(len(dst), p.readable(now))
	copy(dst, p.data[p.head:p.head+n])
	p.head += n
	p.read += uint64(n)
	i := 0
	for i < len(p.arrivals) && p.arrivals[i].end <= p.read {
		i++
	}
	if i > 0 {
		p.arrivals = append(p.arrivals[:0], p.arrivals[i:]...)
	}
	if p.queued() == 0 {
		p.data, p.head = p.data[:0], 0
	}
	return n
}

// closeWrite ends the stream after the queued octets: the reader sees EOF
// (err nil) or err, at step now+delay or after the last queued octet.
func (p *simPipe) closeWrite(err error, now, delay int64) {
	if p.eof {
		return
	}
	p.eof, p.eofErr = true, err
	p.eofAt = max(now+delay, p.lastAt())
}

// atEOF reports whether the reader has reached the end of the stream at
// step now, and with what error.
func (p *simPipe) atEOF(now int64) (bool, error) {
	if p.eof && p.queued() == 0 && now >= p.eofAt {
		return true, p.eofErr
	}
	return false, nil
}

// closeRead is the reader's close: queued octets are dropped and later
// writes are accepted and dropped. It reports whether octets were dropped
// unread (TCP answers with a reset then).
func (p *simPipe) closeRead() bool {
	unread := p.queued() > 0
	p.read += uint64(p.queued())
	p.data, p.head, p.arrivals = p.data[:0], 0, p.arrivals[:0]
	p.discard = true
	p.reset = p.reset || unread
	return unread
}
