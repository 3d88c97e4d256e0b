package config

import (
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

func TestReloadConfig(t *testing.T) {
	reg := prometheus.NewRegistry()
	sc := NewSafeConfig(reg)
	before := float64(time.Now().Unix())

	if err := sc.ReloadConfig("testdata/good.yml", nil); err != nil {
		t.Fatal(err)
	}
	good := sc.C
	if got := testutil.ToFloat64(sc.reloadSuccess); got != 1 {
		t.Errorf("after good load: successful = %v, want 1", got)
	}
	ts := testutil.ToFloat64(sc.reloadTimestamp)
	if ts < before {
		t.Errorf("after good load: timestamp %v, want >= %v", ts, before)
	}

	if err := sc.ReloadConfig("testdata/invalid-read-uc.yml", nil); err == nil {
		t.Fatal("reload of a bad file: no error")
	}
	sc.RLock()
	kept := sc.C
	sc.RUnlock()
	if kept != good {
		t.Error("bad reload replaced the config")
	}
	const failed = `
# HELP rdmarun_exporter_config_last_reload_successful Whether the last configuration reload succeeded (1) or failed (0).
# TYPE rdmarun_exporter_config_last_reload_successful gauge
rdmarun_exporter_config_last_reload_successful 0
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(failed), "rdmarun_exporter_config_last_reload_successful"); err != nil {
		t.Error(err)
	}
	if got := testutil.ToFloat64(sc.reloadTimestamp); got != ts {
		t.Errorf("a failed reload moved the success timestamp from %v to %v", ts, got)
	}

	if err := sc.ReloadConfig("testdata/good.yml", nil); err != nil {
		t.Fatal(err)
	}
	if sc.C == good {
		t.Error("good reload kept the old config")
	}
	if got := testutil.ToFloat64(sc.reloadSuccess); got != 1 {
		t.Errorf("after second good load: successful = %v, want 1", got)
	}
	if got := testutil.ToFloat64(sc.reloadTimestamp); got < ts {
		t.Errorf("timestamp went back from %v to %v", ts, got)
	}
	if n, err := testutil.GatherAndCount(reg); err != nil || n != 2 {
		t.Errorf("registry holds %d series (err %v), want 2", n, err)
	}
	if problems, err := testutil.GatherAndLint(reg); err != nil || len(problems) > 0 {
		t.Errorf("lint: %v %v", problems, err)
	}
}
