//go:build !linux

package collector

// procfsDevices reports false: procfs's sysfs package is built for linux
// only, so elsewhere the own reader reads every file (a fixture tree in a
// test, say).
func (s *scrape) procfsDevices(mount, root string) bool { return false }
