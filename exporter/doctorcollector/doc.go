// Package doctorcollector exposes rdmarun's doctor (package doctor) as
// metrics: one series per check, device and port, whose value is the
// check's status, so that alerts can watch what `rdmarun doctor` would
// say about a host.
//
// The doctor reads some hundred files per port, so it runs on its own
// interval (Runner) and a scrape serves its last report (Collector): a
// scrape never waits for the doctor, and many scrapes cost one run.
package doctorcollector
