package engine

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
