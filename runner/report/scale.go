package report

// LargeFleetHosts is the largest fleet whose outputs keep their
// small-fleet form: a heat-map cell per pair, every run in the report's
// JSON and JUnit. Above it a person reads groups and ranked lists, and the
// coordinator keeps only what the matrices and suspects need in memory,
// streaming each run's detail to its runs file.
const LargeFleetHosts = 64

// Large reports whether f is above LargeFleetHosts.
func (f *Fleet) Large() bool { return f != nil && len(f.Hosts) > LargeFleetHosts }
