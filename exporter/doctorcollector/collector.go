package doctorcollector

import (
	"strconv"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/rdmarun/rdmarun/doctor"
)

var (
	// The numbers are doctor.Status's, which orders them by severity,
	// so "worse than a warning" is >= 3 and max() is the worst check.
	severityDesc = prometheus.NewDesc("rdmarun_doctor_check_severity",
		"Outcome of the doctor's check on the device and port (both empty for the host's checks, port empty for the device's): 0 ok, 1 not_applicable, 2 cannot_tell, 3 warn, 4 fail.",
		[]string{"check", "device", "port"}, nil)
	lastRunDesc = prometheus.NewDesc("rdmarun_doctor_last_run_timestamp_seconds",
		"When the doctor's last run started, in seconds since the epoch; the checks are from that run.",
		nil, nil)
	durationDesc = prometheus.NewDesc("rdmarun_doctor_last_run_duration_seconds",
		"How long the doctor's last run took, in seconds.",
		nil, nil)
)

// Collector serves a Runner's last report. Before the first run, and
// while the doctor is disabled, it exports nothing.
type Collector struct {
	runner *Runner
}

// NewCollector returns a collector of r's reports.
func NewCollector(r *Runner) *Collector { return &Collector{runner: r} }

// Describe implements prometheus.Collector.
func (c *Collector) Describe(ch chan<- *prometheus.Desc) {
	ch <- severityDesc
	ch <- lastRunDesc
	ch <- durationDesc
}

// Collect implements prometheus.Collector.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	rep, at, took, ok := c.runner.Last()
	if !ok {
		return
	}
	for _, s := range series(rep) {
		ch <- prometheus.MustNewConstMetric(severityDesc, prometheus.GaugeValue, float64(s.status), s.check, s.device, s.port)
	}
	ch <- prometheus.MustNewConstMetric(lastRunDesc, prometheus.GaugeValue, float64(at.UnixNano())/1e9)
	ch <- prometheus.MustNewConstMetric(durationDesc, prometheus.GaugeValue, took.Seconds())
}

type checkSeries struct {
	check, device, port string
	status              doctor.Status
}

// series is one series per check, device and port. The doctor reports
// each once; should a future check repeat one (two findings of one
// name), the worst stands, since a duplicate series would fail the whole
// scrape.
func series(rep doctor.Report) []checkSeries {
	out := make([]checkSeries, 0, len(rep.Checks))
	at := map[[3]string]int{}
	for _, c := range rep.Checks {
		port := ""
		if c.Port != 0 {
			port = strconv.Itoa(c.Port)
		}
		key := [3]string{c.Name, c.Device, port}
		if i, seen := at[key]; seen {
			out[i].status = max(out[i].status, c.Status)
			continue
		}
		at[key] = len(out)
		out = append(out, checkSeries{c.Name, c.Device, port, c.Status})
	}
	return out
}
