//go:build chromium

package compare

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rdmarun/rdmarun/internal/chromium"
)

// TestComparisonInChromium: the comparison page parses without errors in
// a real Chromium, draws an interval per judged metric, and lists the
// regression first.
func TestComparisonInChromium(t *testing.T) {
	c, err := Reports(reportOf(1, 1, 1, "lat", "old"), reportOf(2, 1.2, 0.98, "lat", "added"), "base.json", "new.json", DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := HTML(&b, c); err != nil {
		t.Fatal(err)
	}
	page := filepath.Join(t.TempDir(), "compare.html")
	if err := os.WriteFile(page, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	dom := chromium.DOM(t, page)
	if n := strings.Count(dom, `<line class="iv"`); n != 4 {
		t.Errorf("%d intervals drawn, want 4 (p50, p99, bandwidth, message rate)", n)
	}
	first := strings.Index(dom, "<h2 ")
	if first < 0 || !strings.HasPrefix(dom[first:], `<h2 class="regressed">regressed: lat`) {
		t.Errorf("the first test on the page is not the regression: %.80s", dom[max(first, 0):])
	}
	if !strings.Contains(dom, "Unmatched") {
		t.Error("the unmatched tests are not listed")
	}
	chromium.Screenshot(t, page, "rdmarun-compare-screenshot.png", "COMPARE_SCREENSHOT", "1200,1400", 10000)
}
