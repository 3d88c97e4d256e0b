package config

import (
	"fmt"
	"time"
)

// Doctor runs rdmarun's doctor (package doctor) in the exporter, so that
// what `rdmarun doctor` would say about a host (a PCIe link trained
// narrower than the card, an MTU mismatch, a port below its maximum) is a
// series the alerts can watch instead of a command someone must think
// of running.
type Doctor struct {
	Enabled bool `yaml:"enabled"`
	// Interval is how often the doctor runs. It reads some hundred files
	// per port, so it runs on its own schedule and scrapes read its last
	// report; what it checks (link training, MTUs, limits) changes on the
	// scale of reboots and reconfigurations, not seconds.
	Interval time.Duration `yaml:"interval"`
}

// DefaultDoctorInterval is Doctor.Interval when the key is absent.
const DefaultDoctorInterval = 5 * time.Minute

// minDoctorInterval keeps the doctor's file reads a small share of a
// node's sysfs traffic whatever the config says; a run takes milliseconds,
// but on a host with many ports and a slow driver it reads many files.
const minDoctorInterval = 10 * time.Second

// defaultDoctor is what the exporter runs when the config has no doctor
// section: the checks cost little and a degraded link should not need an
// opt-in to be seen.
var defaultDoctor = Doctor{Enabled: true, Interval: DefaultDoctorInterval}

// UnmarshalYAML implements yaml.Unmarshaler.
func (d *Doctor) UnmarshalYAML(unmarshal func(any) error) error {
	*d = defaultDoctor
	type plain Doctor
	if err := unmarshal((*plain)(d)); err != nil {
		return err
	}
	if d.Interval < minDoctorInterval {
		return fmt.Errorf("doctor.interval: %v is shorter than %v; the doctor reads every port's files, and what it checks changes with reboots and reconfigurations, so run it at most every %v (the default is %v)",
			d.Interval, minDoctorInterval, minDoctorInterval, DefaultDoctorInterval)
	}
	return nil
}
