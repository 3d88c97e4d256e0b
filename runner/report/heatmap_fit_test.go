package report

import (
	"bytes"
	"fmt"
	"html"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/rdmarun/rdmarun/fleet"
)

func TestCellValue(t *testing.T) {
	for in, want := range map[float64]string{
		0.004: "0.00", 2.5: "2.50", 95.84: "95.84", 99.996: "100.0", 123.45: "123.5", 999.96: "1000",
		12345.67: "12346", 99999.6: "100k", 123456: "123k", 999.6e3: "1.00M", 1.23456e6: "1.23M",
		45.67e6: "45.7M", 123.4e6: "123M", 999.6e6: "1e+09", 4.2e12: "4e+12",
	} {
		got := cellValue(in)
		if got != want || len(got) > 5 {
			t.Errorf("cellValue(%v) = %q, want %q (five characters at most)", in, got, want)
		}
	}
}

// advance bounds a character's width in em: at or above what common
// sans-serif fonts give it (DejaVu Sans, Chromium's fallback on Linux
// and the widest of them, has 0.636 for a digit, 0.696 bold).
func advance(r rune, bold bool) float64 {
	w := 0.65
	switch {
	case r == '.' || r == ',':
		w = 0.35
	case r == '-':
		w = 0.4
	case r == 'M' || r == 'W' || r == 'm' || r == 'w' || r == '+':
		w = 0.9
	}
	if bold {
		w += 0.1
	}
	return w
}

// cellPad is the room kept between a cell's text and its edges.
const cellPad = 3

var (
	cellGroup  = regexp.MustCompile(`<g class="cell [a-z]+"><title>[^<]*</title><rect x="(\d+)" y="(\d+)" width="(\d+)" height="(\d+)"[^>]*/>(.*?)</g>`)
	cellTextRe = regexp.MustCompile(`<text x="(\d+)" y="(\d+)" class="(val|mark)"[^>]*>([^<]*)</text>`)
	cssFont    = regexp.MustCompile(`\.heatmap \.(val|mark)\{font-size:(\d+)px`)
)

// wideValues is a fleet report whose heat maps hold values from a
// nanosecond to a stalled pair's seconds of RTT, and bandwidth from a
// trickle to more than a port has, some cells failed (a mark alone) and
// some lagging (a value and a mark). Invented, for the layout tests.
func wideValues(t testing.TB) (*Report, []fleet.Matrix, int) {
	var hosts []fleet.Host
	for i := range 6 {
		hosts = append(hosts, fleet.Host{Name: fmt.Sprintf("node%d", i+1)})
	}
	// Seconds and bytes/s, as the coordinator records them.
	latencies := []float64{1e-9, 2.5e-6, 99.996e-6, 999.96e-6, 12345.67e-6, 123456.78e-6, 1.2345678, 45.678, 999.9}
	rates := []float64{1e3, 12.5e9, 99.996e9 / 8, 1234.56e9 / 8, 98765.4e9 / 8, 1.5e15}
	var outcomes []fleet.Outcome
	k := 0
	for a := range hosts {
		for b := range hosts {
			if a == b {
				continue
			}
			p := fleet.Pair{A: fleet.NIC{Host: a}, B: fleet.NIC{Host: b}}
			// Every fifth pair fails: a cell with its mark alone.
			ok := k%5 != 4
			outcomes = append(outcomes,
				fleet.Outcome{Pair: p, Metric: "lat 64B RTT p99", OK: ok, Value: latencies[k%len(latencies)]},
				fleet.Outcome{Pair: p, Metric: "bw 64KiB bandwidth", OK: ok, Value: rates[k%len(rates)], HigherIsBetter: true})
			k++
		}
	}
	ms, err := fleet.Matrices(hosts, outcomes, 0)
	if err != nil {
		t.Fatal(err)
	}
	r := fleetFixture(t)
	r.Fleet.Hosts, r.Fleet.Matrices, r.Fleet.Suspects = hosts, ms, nil
	return r, ms, len(latencies) + len(rates)
}

// TestFleetHeatMapTextFits holds every cell's text of wideValues inside
// its cell: its width bounded from the font size the page's style gives
// it, its height from the baseline.
func TestFleetHeatMapTextFits(t *testing.T) {
	r, ms, values := wideValues(t)
	hosts := r.Fleet.Hosts
	var b bytes.Buffer
	if err := HTML(&b, r); err != nil {
		t.Fatal(err)
	}
	page := b.String()
	fonts := map[string]float64{}
	for _, m := range cssFont.FindAllStringSubmatch(page, -1) {
		fonts[m[1]], _ = strconv.ParseFloat(m[2], 64)
	}
	if fonts["val"] == 0 || fonts["mark"] == 0 {
		t.Fatalf("the page's style gives no font size for a cell's value or mark: %v", fonts)
	}
	cells := cellGroup.FindAllStringSubmatch(page, -1)
	if want := len(ms) * len(hosts) * len(hosts); len(cells) != want {
		t.Fatalf("%d cells, want %d", len(cells), want)
	}
	texts := map[string]int{}
	for _, c := range cells {
		x, y, w, h := atoi(t, c[1]), atoi(t, c[2]), atoi(t, c[3]), atoi(t, c[4])
		for _, tx := range cellTextRe.FindAllStringSubmatch(c[5], -1) {
			cx, base, class, s := atoi(t, tx[1]), atoi(t, tx[2]), tx[3], html.UnescapeString(tx[4])
			texts[class]++
			size := fonts[class]
			width := 0.0
			for _, r := range s {
				width += advance(r, class == "mark") * size
			}
			// text-anchor: middle.
			left, right := float64(cx)-width/2, float64(cx)+width/2
			if left < float64(x+cellPad) || right > float64(x+w-cellPad) {
				t.Errorf("%s %q at %gpx is up to %.1fpx wide, centred at %d: it leaves its cell x %d to %d", class, s, size, width, cx, x, x+w)
			}
			// Ascent and descent within 0.8 and 0.25 em of the baseline.
			if top, bottom := float64(base)-0.8*size, float64(base)+0.25*size; top < float64(y) || bottom > float64(y+h) {
				t.Errorf("%s %q at %gpx, baseline %d: it leaves its cell y %d to %d", class, s, size, base, y, y+h)
			}
		}
	}
	if texts["val"] < values || texts["mark"] == 0 {
		t.Errorf("texts checked %v: want every value of the fixture and some marks", texts)
	}
	if !strings.Contains(page, "; k, M: thousand, million</text>") {
		t.Error("a map with k and M values does not say what they mean")
	}
}

func atoi(t *testing.T, s string) int {
	t.Helper()
	n, err := strconv.Atoi(s)
	if err != nil {
		t.Fatal(err)
	}
	return n
}
