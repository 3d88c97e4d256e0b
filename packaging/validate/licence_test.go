package validate

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// licenceID is the project's licence (LICENSE), as an SPDX identifier.
const licenceID = "Apache-2.0"

// TestPackagedChartCarriesLicence packages the chart as make dist-chart
// does and reads the archive a user downloads: it must hold the licence's
// text and name the licence in Chart.yaml's annotations, which chart
// indexes show.
func TestPackagedChartCarriesLicence(t *testing.T) {
	dir := t.TempDir()
	if _, err := helm(t, "package", chartDir(t), "--destination", dir); err != nil {
		t.Fatal(err)
	}
	archives, err := filepath.Glob(filepath.Join(dir, "*.tgz"))
	if err != nil {
		t.Fatal(err)
	}
	if len(archives) != 1 {
		t.Fatalf("helm package made %v, want one .tgz", archives)
	}
	files, err := chartArchiveFiles(archives[0], "rdmarun/LICENSE", "rdmarun/Chart.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if err := checkChartLicence(files["rdmarun/Chart.yaml"], files["rdmarun/LICENSE"], readFile(t, filepath.Join(repoRoot(t), "LICENSE"))); err != nil {
		t.Errorf("%s: %v", filepath.Base(archives[0]), err)
	}
}

// TestCheckChartLicenceRefuses: each way a chart can lose its licence
// fails the check, with a message naming what is missing.
func TestCheckChartLicenceRefuses(t *testing.T) {
	licence := []byte("the licence text\n")
	good := []byte("apiVersion: v2\nname: rdmarun\nversion: 0.1.0\nannotations:\n  artifacthub.io/license: " + licenceID + "\n")
	if err := checkChartLicence(good, licence, licence); err != nil {
		t.Fatalf("a chart with its licence fails: %v", err)
	}
	for _, c := range []struct {
		name                    string
		chartYAML, chartLicence []byte
		want                    string
	}{
		{"no LICENSE", good, nil, "holds no LICENSE"},
		{"another text", good, []byte("other\n"), "is not the repository's LICENSE"},
		{"no annotation", []byte("apiVersion: v2\nname: rdmarun\nversion: 0.1.0\n"), licence, "artifacthub.io/license is \"\""},
		{"another licence", []byte("apiVersion: v2\nannotations:\n  artifacthub.io/license: MIT\n"), licence, "artifacthub.io/license is \"MIT\""},
		{"no Chart.yaml", nil, licence, "holds no Chart.yaml"},
		{"Chart.yaml not YAML", []byte("annotations: [\n"), licence, "Chart.yaml:"},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := checkChartLicence(c.chartYAML, c.chartLicence, licence)
			if err == nil {
				t.Fatal("passed")
			}
			if !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %q does not say %q", err, c.want)
			}
		})
	}
}

// checkChartLicence: the packaged Chart.yaml names licenceID and the
// packaged LICENSE is the repository's text. A nil file is one the archive
// lacks.
func checkChartLicence(chartYAML, chartLicence, repoLicence []byte) error {
	var errs []error
	if chartLicence == nil {
		errs = append(errs, errors.New("the chart holds no LICENSE; make helm-refresh copies it"))
	} else if !bytes.Equal(chartLicence, repoLicence) {
		errs = append(errs, errors.New("the chart's LICENSE is not the repository's LICENSE; make helm-refresh copies it"))
	}
	if chartYAML == nil {
		return errors.Join(append(errs, errors.New("the chart holds no Chart.yaml"))...)
	}
	var meta struct {
		Annotations map[string]string `json:"annotations"`
	}
	if err := yaml.Unmarshal(chartYAML, &meta); err != nil {
		return errors.Join(append(errs, fmt.Errorf("Chart.yaml: %w", err))...)
	}
	if got := meta.Annotations["artifacthub.io/license"]; got != licenceID {
		errs = append(errs, fmt.Errorf("Chart.yaml: annotations: artifacthub.io/license is %q, want %q", got, licenceID))
	}
	return errors.Join(errs...)
}

// chartArchiveFiles reads the named members of a chart archive (a gzipped
// tar); a name the archive lacks is absent from the map.
func chartArchiveFiles(path string, names ...string) (map[string][]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	want := map[string]bool{}
	for _, n := range names {
		want[n] = true
	}
	files := map[string][]byte{}
	tr := tar.NewReader(zr)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return files, nil
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		if !want[h.Name] {
			continue
		}
		b, err := io.ReadAll(tr)
		if err != nil {
			return nil, fmt.Errorf("%s: %s: %w", path, h.Name, err)
		}
		files[h.Name] = b
	}
}
