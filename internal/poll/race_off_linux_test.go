//go:build linux && !iwarp_portable && !race

package poll

// raceEnabled: the race detector is on; timings mean nothing then.
const raceEnabled = false
