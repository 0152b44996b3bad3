//go:build race

package verbs

// raceEnabled: the race detector allocates on its own account.
const raceEnabled = true
