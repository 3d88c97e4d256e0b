package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestDoctorDefaults(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want Doctor
	}{
		// A config without the section runs the doctor: a degraded
		// link should not need an opt-in to be seen.
		{"", Doctor{Enabled: true, Interval: 5 * time.Minute}},
		{"modules:\n", Doctor{Enabled: true, Interval: 5 * time.Minute}},
		{"doctor: {}\n", Doctor{Enabled: true, Interval: 5 * time.Minute}},
		{"doctor: {enabled: false}\n", Doctor{Enabled: false, Interval: 5 * time.Minute}},
		{"doctor: {interval: 10s}\n", Doctor{Enabled: true, Interval: 10 * time.Second}},
		{"doctor: {interval: 1h}\n", Doctor{Enabled: true, Interval: time.Hour}},
	} {
		c, err := Parse([]byte(tc.in))
		if err != nil {
			t.Fatalf("Parse(%q): %v", tc.in, err)
		}
		if c.Doctor != tc.want {
			t.Errorf("Parse(%q) doctor = %+v, want %+v", tc.in, c.Doctor, tc.want)
		}
	}
}

func TestLoadBadDoctorConfigs(t *testing.T) {
	for _, tc := range []struct {
		file, want string
	}{
		{"interval", "doctor.interval: 5s is shorter than 10s; the doctor reads every port's files, and what it checks changes with reboots and reconfigurations, so run it at most every 10s (the default is 5m0s)"},
		{"interval-zero", "doctor.interval: 0s is shorter than 10s; the doctor reads every port's files, and what it checks changes with reboots and reconfigurations, so run it at most every 10s (the default is 5m0s)"},
	} {
		t.Run(tc.file, func(t *testing.T) {
			path := "testdata/doctor-" + tc.file + ".yml"
			c, err := Load(path)
			if err == nil {
				t.Fatalf("Load(%s) = %+v, want error", path, c.Doctor)
			}
			if want := "config " + path + ": " + tc.want; err.Error() != want {
				t.Errorf("Load(%s) error:\n got %q\nwant %q", path, err, want)
			}
		})
	}
}

// Every doctor-*.yml must have a row above, or a new file would pass
// unchecked.
func TestEveryDoctorFileIsTested(t *testing.T) {
	src, err := os.ReadFile("doctor_test.go")
	if err != nil {
		t.Fatal(err)
	}
	files, _ := filepath.Glob("testdata/doctor-*.yml")
	if len(files) == 0 {
		t.Fatal("no testdata/doctor-*.yml")
	}
	for _, f := range files {
		name := strings.TrimSuffix(strings.TrimPrefix(filepath.Base(f), "doctor-"), ".yml")
		if !strings.Contains(string(src), `{"`+name+`", `) {
			t.Errorf("%s has no row in TestLoadBadDoctorConfigs", f)
		}
	}
}
