package rdmap

// ring is a fixed-capacity FIFO that never allocates after creation;
// pointers to its elements stay valid until they are popped.
type ring[T any] struct {
	buf  []T
	head int
	n    int
}

func newRing[T any](capacity int) ring[T] { return ring[T]{buf: make([]T, max(capacity, 1))} }

func (r *ring[T]) len() int   { return r.n }
func (r *ring[T]) full() bool { return r.n == len(r.buf) }

// push appends v; the caller checked full.
func (r *ring[T]) push(v T) *T {
	p := &r.buf[(r.head+r.n)%len(r.buf)]
	*p = v
	r.n++
	return p
}

// at returns the i-th oldest element.
func (r *ring[T]) at(i int) *T { return &r.buf[(r.head+i)%len(r.buf)] }

// pop removes the oldest element.
func (r *ring[T]) pop() {
	var zero T
	r.buf[r.head] = zero
	r.head = (r.head + 1) % len(r.buf)
	r.n--
}

// fifo is an unbounded FIFO over a slice that is reused: it allocates only
// when it grows past its largest size so far.
type fifo[T any] struct {
	buf  []T
	head int
}

func (f *fifo[T]) len() int { return len(f.buf) - f.head }

func (f *fifo[T]) push(v T) {
	if f.head > 0 && len(f.buf) == cap(f.buf) {
		// Slide the live elements down before growing.
		n := copy(f.buf, f.buf[f.head:])
		clear(f.buf[n:])
		f.buf, f.head = f.buf[:n], 0
	}
	f.buf = append(f.buf, v)
}

// front returns the oldest element.
func (f *fifo[T]) front() *T { return &f.buf[f.head] }

// pop removes the oldest element.
func (f *fifo[T]) pop() {
	var zero T
	f.buf[f.head] = zero
	f.head++
	if f.head == len(f.buf) {
		f.buf, f.head = f.buf[:0], 0
	}
}

// at returns the i-th oldest element.
func (f *fifo[T]) at(i int) *T { return &f.buf[f.head+i] }

// back returns the newest element.
func (f *fifo[T]) back() *T { return &f.buf[len(f.buf)-1] }

// popBack removes the newest element.
func (f *fifo[T]) popBack() {
	var zero T
	f.buf[len(f.buf)-1] = zero
	f.buf = f.buf[:len(f.buf)-1]
	if f.head == len(f.buf) {
		f.buf, f.head = f.buf[:0], 0
	}
}
