package mem

// A Holder holds leases: a QP whose outbound bytes (a Read Response, or a
// Send or Write whose first FPDU was handed out) keep a region's bytes in
// use across waits on the peer.
//
// Revoke is called (from the goroutine of an invalidation whose context
// ended, see Invalidation.Revoke) to make the holder give its leases on r
// up: it must make its stream fail and end the leases soon without waiting
// for the peer, and it must not block. From the moment Revoke is called,
// PinLeased for the revoked leases fails, so the holder cannot start another
// access to the bytes; an access in progress holds a transient pin, which
// the invalidation still waits for. A Holder is compared with == (it is a
// map key): use a pointer type.
type Holder interface{ Revoke(r *Region) }

// leaseKey names the leases of one holder at one generation.
type leaseKey struct {
	h Holder
	g Gen
}

// lease is the count of one holder's leases at one generation and whether
// they were revoked.
type lease struct {
	n       int
	revoked bool
}

// genCount is the number of leases outstanding at one generation.
type genCount struct {
	g Gen
	n int
}

// Lease takes a lease on r at generation g for h, like Pin: it fails
// (false) if the region is invalid or at another generation. A lease makes
// invalidations of g wait (Drained stays false) until EndLease, but by
// itself licenses no access to the bytes: each system call or copy that
// touches them runs under a transient pin (Pin while the region is valid
// at g, PinLeased after an invalidation began).
func (r *Region) Lease(g Gen, h Holder) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	// Begins change the life word's generation and live bit only under mu,
	// so this check stays true until the lease is recorded.
	w := r.life.Load()
	if w&liveBit == 0 || genOf(w) != g {
		return false
	}
	if r.leases == nil {
		r.leases = make(map[leaseKey]lease)
	}
	k := leaseKey{h, g}
	l := r.leases[k]
	l.n++
	r.leases[k] = l
	if n := len(r.leaseGens); n > 0 && r.leaseGens[n-1].g == g {
		r.leaseGens[n-1].n++
	} else {
		r.leaseGens = append(r.leaseGens, genCount{g, 1})
	}
	return true
}

// EndLease ends one lease of h at generation g. The EndLease that ends the
// last lease an invalidation waits for (its pins gone) runs its drain on the
// calling goroutine. It panics if h holds no lease at g.
func (r *Region) EndLease(g Gen, h Holder) {
	r.mu.Lock()
	k := leaseKey{h, g}
	l, ok := r.leases[k]
	if !ok {
		r.mu.Unlock()
		panic(errEndLease)
	}
	if l.n--; l.n == 0 {
		delete(r.leases, k)
	} else {
		r.leases[k] = l
	}
	var fns []func()
	for i := range r.leaseGens {
		if r.leaseGens[i].g != g {
			continue
		}
		if r.leaseGens[i].n--; r.leaseGens[i].n == 0 {
			r.leaseGens = append(r.leaseGens[:i], r.leaseGens[i+1:]...)
			if len(r.pending) > 0 {
				fns = r.settleLocked()
			}
		}
		break
	}
	r.mu.Unlock()
	runAll(fns)
}

// PinLeased takes a transient pin on bytes h leased at generation g: it is
// Pin while the region is valid at g, and after an invalidation of g began
// it still succeeds for as long as h's lease at g is held and not revoked.
// A lease holder brackets every system call or copy on leased bytes with
// PinLeased and Unpin(g).
func (r *Region) PinLeased(g Gen, h Holder) bool {
	return r.Pin(g) || r.pinLeasedSlow(g, h)
}

// pinLeasedSlow is PinLeased after Pin failed: the generation g has ended
// (or the region is invalid at it).
func (r *Region) pinLeasedSlow(g Gen, h Holder) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if l, ok := r.leases[leaseKey{h, g}]; !ok || l.revoked {
		return false
	}
	// A lease is taken only while g is current and valid, and a Begin (which
	// runs under mu, like this) ends g: g is older than the current
	// generation now. Count the pin where Unpin(g) will look for it.
	for {
		w := r.life.Load()
		a := age(w, g)
		if a > 1 {
			r.stale.Add(1)
			return true
		}
		sh := slotShift(g)
		if w>>sh&pinMax == pinMax {
			panic(errTooManyPins)
		}
		if r.life.CompareAndSwap(w, w+1<<sh) {
			return true
		}
	}
}

// leasesUpTo reports whether leases of generation g or older (as seen from
// the current generation w) remain. Called with mu held.
func (r *Region) leasesUpTo(w uint64, g Gen) bool {
	ag := age(w, g)
	for _, c := range r.leaseGens {
		if age(w, c.g) >= ag {
			return true
		}
	}
	return false
}
