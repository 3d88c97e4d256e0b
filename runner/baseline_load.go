package runner

import (
	"math"
	"path/filepath"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/rdmarun/rdmarun/internal/yamlerr"
	"github.com/rdmarun/rdmarun/runner/compare"
)

// baselineKeys are the keys of baseline: written as a mapping.
var baselineKeys = []string{"file", "min_effect", "confidence"}

const (
	baselineFileAllowed = "write the path of a report of an earlier run of this scenario (written with --json or --save-baseline)"
	baselineAllowed     = baselineFileAllowed + ", or a mapping {file, min_effect, confidence}"
	minEffectAllowed    = "write the smallest change that matters, as a percentage (5%) or a fraction (0.05), from 0 up to but not including 100%"
	confidenceAllowed   = "write how sure a verdict must be, as a percentage (95%) or a fraction (0.95), from 50% up to but not including 100%"
)

// parseBaseline reads baseline: FILE, or the mapping that also sets the
// comparison's smallest effect and confidence.
func (l *loader) parseBaseline(k, v *yaml.Node) *Baseline {
	l.haveBaseline, l.baselineNode = true, k
	b := &Baseline{Options: compare.DefaultOptions()}
	n := yamlerr.Resolve(v)
	if n.Kind != yaml.MappingNode {
		l.baselineAt = n
		if s, ok := l.text(n, "baseline", baselineAllowed); ok {
			b.File = s
		}
		return b
	}
	pairs := l.pairs(n, "baseline", baselineKeys)
	if p, ok := pairs["file"]; ok {
		l.baselineAt = yamlerr.Resolve(p.v)
		if s, ok := l.text(p.v, "baseline.file", baselineFileAllowed); ok {
			b.File = s
		}
	} else if l.baselineFlag == "" {
		l.errorf(n, "baseline.file", "missing; %s", baselineFileAllowed)
	}
	if p, ok := pairs["min_effect"]; ok {
		if f, ok := l.fraction(p.v, "baseline.min_effect", 0, minEffectAllowed); ok {
			b.Options.MinEffect = f
		}
	}
	if p, ok := pairs["confidence"]; ok {
		if f, ok := l.fraction(p.v, "baseline.confidence", 0.5, confidenceAllowed); ok {
			b.Options.Confidence = f
		}
	}
	return b
}

// fraction reads 5% or 0.05, at least lo and below 1.
func (l *loader) fraction(v *yaml.Node, key string, lo float64, allowed string) (float64, bool) {
	s, ok := l.scalar(v, key, allowed)
	if !ok {
		return 0, false
	}
	n := yamlerr.Resolve(v)
	t, scale := strings.TrimSpace(s), 1.0
	if p, ok := strings.CutSuffix(t, "%"); ok {
		t, scale = strings.TrimSpace(p), 100
	}
	f, err := strconv.ParseFloat(t, 64)
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
		l.errorf(n, key, "%q is not a percentage or a fraction; %s", s, allowed)
		return 0, false
	}
	if f /= scale; f < lo || f >= 1 {
		l.errorf(n, key, "%s is out of range; %s", strings.TrimSpace(s), allowed)
		return 0, false
	}
	return f, true
}

// applyBaselineFlag puts --baseline in place of the file's baseline:,
// keeping the file's min_effect and confidence.
func (l *loader) applyBaselineFlag(sc *Scenario) {
	if l.baselineFlag == "" {
		return
	}
	if sc.Baseline == nil {
		sc.Baseline = &Baseline{Options: compare.DefaultOptions()}
	}
	sc.Baseline.File = l.baselineFlag
	l.haveBaseline, l.baselineAt, l.baselineNode = true, nil, nil
}

// baselineKey is what errors about the baseline name: the key, or the
// flag that replaced it.
func (l *loader) baselineKey() string {
	if l.baselineFlag != "" {
		return "--baseline"
	}
	return "baseline"
}

// usesBaseline counts a condition that reads the baseline, and refuses
// it when the scenario has none to read: it could only fail.
func (l *loader) usesBaseline(n *yaml.Node, t *Threshold) bool {
	if !t.usesBaseline() {
		return true
	}
	l.baselineUsers++
	switch {
	case l.haveBaseline:
		return true
	case l.spelled != nil:
		l.errorf(n, "pass", "%q compares with a baseline, and rdmarun bench has none; run the case from a scenario file with baseline: FILE", t.Source())
	default:
		l.errorf(n, "pass", "%q compares with a baseline, and this scenario has none; add baseline: FILE (a report of an earlier run, written with --json or --save-baseline), or run it with --baseline FILE", t.Source())
	}
	return false
}

// checkBaseline refuses a baseline nothing reads, which would look like
// a comparison and be none, and one given to a fleet.
func (l *loader) checkBaseline(sc *Scenario) {
	if sc.Baseline == nil {
		return
	}
	switch {
	case l.fleet != nil:
		l.errorf(l.baselineNode, l.baselineKey(), "a fleet's runs are not judged against a baseline; compare a fleet's reports with rdmarun compare BASE.json NEW.json")
	case l.baselineUsers == 0:
		l.errorf(l.baselineNode, l.baselineKey(), "no condition reads the baseline; add one to a case's pass:, such as not regressed(p99) or bw_gbps >= baseline.bw_gbps * 0.95, or remove it")
	}
}

// readBaseline reads the baseline's report, a relative baseline: against
// the scenario's directory.
func (l *loader) readBaseline(sc *Scenario, dir string) {
	b := sc.Baseline
	if b == nil || b.File == "" {
		return
	}
	if l.baselineFlag == "" && !filepath.IsAbs(b.File) {
		b.File = filepath.Join(dir, b.File)
	}
	rep, err := compare.Read(b.File)
	if err != nil {
		l.errorf(l.baselineAt, l.baselineKey(), "%v; %s", err, baselineFileAllowed)
		return
	}
	b.Report = rep
}
