//go:build race

package iwarp_test

const raceEnabled = true
