package main

import (
	"expvar"
	"net"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/goiwarp/iwarp"
)

// expvarDevice is the Device whose counters the expvar variable
// "iwarp_device" shows: the last one given to serveExpvar. expvar.Publish
// panics when a name is published twice, so the variable is published once
// and reads this.
var (
	expvarDevice  atomic.Pointer[iwarp.Device]
	expvarPublish sync.Once
)

// serveExpvar publishes dev's counters as the expvar variable
// "iwarp_device" and serves /debug/vars on addr in the background.
func serveExpvar(addr string, dev *iwarp.Device) error {
	_, err := serveExpvarAt(addr, dev)
	return err
}

// serveExpvarAt is serveExpvar returning the address it listens on.
func serveExpvarAt(addr string, dev *iwarp.Device) (net.Addr, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	expvarDevice.Store(dev)
	expvarPublish.Do(func() {
		expvar.Publish("iwarp_device", expvar.Func(func() any {
			if d := expvarDevice.Load(); d != nil {
				return d.Stats()
			}
			return nil
		}))
	})
	go func() { _ = http.Serve(ln, http.DefaultServeMux) }()
	return ln.Addr(), nil
}

// checkExpvarAddr reports whether an -expvar value is empty (no endpoint)
// or a HOST:PORT to listen on; if not it reports the flag and returns false
// (the command exits 2).
func checkExpvarAddr(f *cmdFlags, addr string) bool {
	if addr == "" {
		return true
	}
	_, p, err := net.SplitHostPort(addr)
	if err != nil {
		f.badFlag("expvar", addr, "want HOST:PORT (an empty HOST listens on every address)")
		return false
	}
	if n, err := strconv.Atoi(p); err != nil || n < 0 || n > 65535 {
		f.badFlag("expvar", addr, "port %q is not a number from 0 to 65535", p)
		return false
	}
	return true
}
