//go:build !race

package rdmap

const raceEnabled = false
