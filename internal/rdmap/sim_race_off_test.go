//go:build !race

package rdmap

const simRace = false
