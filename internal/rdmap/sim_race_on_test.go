//go:build race

package rdmap

// simRace: the race detector slows the simulation about fifteen times;
// TestSim then runs a tenth of its seeds unless -sim.seeds is given (the
// simulation is one goroutine per seed: the detector has little to find in
// it, and CI runs the full count without it).
const simRace = true
