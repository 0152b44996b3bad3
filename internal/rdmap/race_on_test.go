//go:build race

package rdmap

// raceEnabled: the race detector makes sync.Pool drop items at random, so
// allocation counts are not meaningful.
const raceEnabled = true
