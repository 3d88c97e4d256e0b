package validate

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
)

// strictDecoder decodes into the real API types and fails on unknown or
// duplicate fields, as the API server's strict field validation does.
var strictDecoder = func() runtime.Decoder {
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		panic(err)
	}
	if err := monitoringv1.AddToScheme(s); err != nil {
		panic(err)
	}
	return serializer.NewCodecFactory(s, serializer.EnableStrict).UniversalDeserializer()
}()

// decodeAll decodes every document of a multi-document YAML stream.
// Documents holding only comments (helm's "# Source:" of an empty
// template) are skipped.
func decodeAll(manifest string) ([]runtime.Object, error) {
	r := utilyaml.NewYAMLReader(bufio.NewReader(strings.NewReader(manifest)))
	var objs []runtime.Object
	for i := 0; ; i++ {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			return objs, nil
		}
		if err != nil {
			return nil, err
		}
		if isEmptyDocument(doc) {
			continue
		}
		obj, _, err := strictDecoder.Decode(doc, nil, nil)
		if err != nil {
			return nil, fmt.Errorf("document %d: %w\n%s", i, err, firstLines(doc, 12))
		}
		objs = append(objs, obj)
	}
}

func isEmptyDocument(doc []byte) bool {
	for _, line := range bytes.Split(doc, []byte("\n")) {
		l := bytes.TrimSpace(line)
		if len(l) > 0 && l[0] != '#' && string(l) != "---" {
			return false
		}
	}
	return true
}

func firstLines(b []byte, n int) string {
	lines := strings.SplitN(string(b), "\n", n+1)
	if len(lines) > n {
		lines = lines[:n]
	}
	return strings.Join(lines, "\n")
}

// kindsOf lists the kinds of objs, in order, as "Kind/name".
func kindsOf(objs []runtime.Object) []string {
	var ks []string
	for _, o := range objs {
		m, ok := o.(interface{ GetName() string })
		name := ""
		if ok {
			name = m.GetName()
		}
		ks = append(ks, fmt.Sprintf("%T/%s", o, name))
	}
	return ks
}

func TestRenderDecodesStrictly(t *testing.T) {
	for _, c := range renderCases(t) {
		for _, kv := range kubeVersions {
			t.Run(c.name+"/"+kv, func(t *testing.T) {
				objs, err := decodeAll(render(t, c, kv))
				if err != nil {
					t.Fatal(err)
				}
				// The objects every case must have; the optional ones are
				// checked where their values are.
				want := map[string]bool{"*v1.DaemonSet": false, "*v1.Service": false, "*v1.ConfigMap": false}
				for _, o := range objs {
					if _, ok := want[fmt.Sprintf("%T", o)]; ok {
						want[fmt.Sprintf("%T", o)] = true
					}
				}
				for k, seen := range want {
					if !seen {
						t.Errorf("no %s in the render; got %v", k, kindsOf(objs))
					}
				}
			})
		}
	}
}

// TestStrictDecodingRejectsMisspelledFields proves the decoding above can
// fail: one misspelt field in a rendered document must be an error that
// names it.
func TestStrictDecodingRejectsMisspelledFields(t *testing.T) {
	manifest := render(t, renderCase{name: "monitoring", args: []string{"--set", "serviceMonitor.enabled=true",
		"--set", "prometheusRule.enabled=true"}}, kubeVersions[len(kubeVersions)-1])
	if _, err := decodeAll(manifest); err != nil {
		t.Fatalf("the unmodified render must decode: %v", err)
	}
	for _, m := range []struct{ from, to string }{
		{"hostNetwork: true", "hostNetwrok: true"},
		{"readOnlyRootFilesystem: true", "readOnlyRootFileSystem: true"},
		{"publishNotReadyAddresses: true", "publishNotReadyAdresses: true"},
		{"scrapeTimeout:", "scrapeTimout:"},
		{"  groups:\n", "  grups:\n"},
	} {
		t.Run(m.to, func(t *testing.T) {
			if !strings.Contains(manifest, m.from) {
				t.Fatalf("the render has no %q to misspell", m.from)
			}
			mutated := strings.Replace(manifest, m.from, m.to, 1)
			_, err := decodeAll(mutated)
			if err == nil {
				t.Fatalf("%q decoded without error", m.to)
			}
			field := strings.TrimSpace(strings.SplitN(m.to, ":", 2)[0])
			if !strings.Contains(err.Error(), field) {
				t.Errorf("the error does not name %q: %v", field, err)
			}
		})
	}
	t.Run("type error", func(t *testing.T) {
		mutated := strings.Replace(manifest, "drop: [ALL]", "drop: ALL", 1)
		if _, err := decodeAll(mutated); err == nil {
			t.Fatal("capabilities.drop as a string decoded without error")
		}
	})
}
