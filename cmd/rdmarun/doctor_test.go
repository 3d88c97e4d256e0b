package main

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestDoctorExitCodes runs the command on the doctor package's saved
// hosts: the exit code is the contract CI scripts gate on.
func TestDoctorExitCodes(t *testing.T) {
	fixtures := filepath.Join("..", "..", "doctor", "testdata")
	for _, tc := range []struct {
		args []string
		code int
	}{
		{[]string{"--root", filepath.Join(fixtures, "mlx5-roce")}, exitOK},
		{[]string{"--root", filepath.Join(fixtures, "rxe")}, exitOK},
		{[]string{"--root", filepath.Join(fixtures, "broken")}, exitFailed},
		{[]string{"--root", filepath.Join(fixtures, "none")}, exitEnvironment},
		{[]string{"--root", filepath.Join(fixtures, "mlx5-ib"), "--cpus", "2-3"}, exitOK},
		{[]string{"--root", filepath.Join(fixtures, "mlx5-ib"), "--cpus", "0,2"}, exitFailed},
		{[]string{"--root", filepath.Join(fixtures, "broken"), "--device", "mlx5_1"}, exitInvalid},
		{[]string{"--root", filepath.Join(fixtures, "broken"), "--port", "2"}, exitInvalid},
	} {
		var stdout, stderr bytes.Buffer
		if code := run(append([]string{"doctor"}, tc.args...), &stdout, &stderr); code != tc.code {
			t.Errorf("doctor %s exited %d, want %d; stderr:\n%s", strings.Join(tc.args, " "), code, tc.code, stderr.String())
		}
	}
}

// TestDoctorJSON: the JSON names its schema, counts the statuses and
// lists the failed checks the exit code stands for.
func TestDoctorJSON(t *testing.T) {
	var stdout, stderr bytes.Buffer
	root := filepath.Join("..", "..", "doctor", "testdata", "broken")
	if code := run([]string{"doctor", "--json", "--root", root}, &stdout, &stderr); code != exitFailed {
		t.Fatalf("exit %d, want %d", code, exitFailed)
	}
	var r struct {
		Schema  string         `json:"schema"`
		Devices []string       `json:"devices"`
		Summary map[string]int `json:"summary"`
		Checks  []struct {
			Name   string `json:"check"`
			Status string `json:"status"`
		} `json:"checks"`
	}
	if err := json.Unmarshal(stdout.Bytes(), &r); err != nil {
		t.Fatal(err)
	}
	var failed []string
	for _, c := range r.Checks {
		if c.Status == "fail" {
			failed = append(failed, c.Name)
		}
	}
	if r.Schema != "rdmarun.doctor/v1" || !slices.Equal(r.Devices, []string{"mlx5_0"}) || r.Summary["fail"] != len(failed) {
		t.Errorf("schema %q, devices %q, summary %v, failed %q", r.Schema, r.Devices, r.Summary, failed)
	}
	if want := "rdmarun: failed checks: " + strings.Join(failed, ", ") + "\n"; stderr.String() != want {
		t.Errorf("stderr %q, want %q", stderr.String(), want)
	}
}
