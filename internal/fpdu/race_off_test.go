//go:build !race

package fpdu

// raceEnabled: the race detector is off.
const raceEnabled = false
