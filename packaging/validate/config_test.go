package validate

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"
)

// The path the chart mounts the token at, inside the container.
const tokenPath = "/etc/rdmarun/token"

// buildDir holds what the tests build; TestMain removes it.
var buildDir string

func TestMain(m *testing.M) {
	var err error
	if buildDir, err = os.MkdirTemp("", "rdmarun-validate-"); err != nil {
		panic(err)
	}
	code := m.Run()
	os.RemoveAll(buildDir)
	os.Exit(code)
}

var (
	exporterOnce sync.Once
	exporterPath string
	exporterErr  error
)

// exporterBinary is $RDMARUN_EXPORTER_BIN, or rdmarun_exporter built from
// the main module into a temporary directory.
func exporterBinary(t *testing.T) string {
	t.Helper()
	exporterOnce.Do(func() {
		if p := os.Getenv("RDMARUN_EXPORTER_BIN"); p != "" {
			exporterPath = p
			return
		}
		exporterPath = filepath.Join(buildDir, "rdmarun_exporter")
		ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, "go", "build", "-o", exporterPath, "./cmd/rdmarun_exporter")
		cmd.Dir = repoRoot(t)
		if out, err := cmd.CombinedOutput(); err != nil {
			exporterErr = &cmdError{args: cmd.Args, err: err, stderr: string(out)}
		}
	})
	if exporterErr != nil {
		t.Fatal(exporterErr)
	}
	return exporterPath
}

// renderedConfig is the exporter configuration of a render.
func renderedConfig(t *testing.T, c renderCase) string {
	t.Helper()
	objs, err := decodeAll(render(t, c, kubeVersions[0]))
	if err != nil {
		t.Fatal(err)
	}
	for _, cm := range findObjects[*corev1.ConfigMap](objs) {
		if cfg, ok := cm.Data["rdmarun_exporter.yml"]; ok {
			return cfg
		}
	}
	t.Fatal("no ConfigMap with rdmarun_exporter.yml")
	return ""
}

// configCheck runs `rdmarun_exporter --config.check` on cfg. The token
// path of the container is replaced by a token file in a temporary
// directory, which stands for the mounted Secret.
func configCheck(t *testing.T, cfg string) (string, error) {
	t.Helper()
	dir := t.TempDir()
	token := filepath.Join(dir, "token")
	if err := os.WriteFile(token, []byte("0123456789abcdef0123456789abcdef\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, "rdmarun_exporter.yml")
	if err := os.WriteFile(file, []byte(strings.ReplaceAll(cfg, tokenPath, token)), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, exporterBinary(t), "--config.check", "--config.file="+file)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	return out.String(), err
}

// TestRenderedConfigPassesConfigCheck: the configuration the chart renders
// for every case is one the exporter accepts, and it finds the peers
// through the headless Service's SRV name.
func TestRenderedConfigPassesConfigCheck(t *testing.T) {
	for _, c := range renderCases(t) {
		t.Run(c.name, func(t *testing.T) {
			cfg := renderedConfig(t, c)
			if out, err := configCheck(t, cfg); err != nil {
				t.Fatalf("--config.check: %v\n%s\nconfig:\n%s", err, out, cfg)
			}
			srv := "_rdmarun._tcp." + releaseName + "-peers." + namespace + ".svc.cluster.local"
			if !strings.Contains(cfg, "name: "+srv) {
				t.Errorf("the config does not resolve %s:\n%s", srv, cfg)
			}
			// Never an open responder; a token whenever the chart has one.
			var parsed struct {
				Responder struct {
					Enabled              bool   `json:"enabled"`
					TokenFile            string `json:"token_file"`
					AllowUnauthenticated *bool  `json:"allow_unauthenticated"`
				} `json:"responder"`
			}
			if err := yaml.Unmarshal([]byte(cfg), &parsed); err != nil {
				t.Fatal(err)
			}
			r := parsed.Responder
			if r.AllowUnauthenticated == nil || *r.AllowUnauthenticated {
				t.Errorf("responder.allow_unauthenticated is not false:\n%s", cfg)
			}
			// Of the cases, only the default values have no token.
			if wantToken := c.name != "default"; (r.TokenFile == tokenPath) != wantToken {
				t.Errorf("token_file %q; want %s: %v", r.TokenFile, tokenPath, wantToken)
			}
		})
	}
}

// TestConfigCheckCanFail: a bad module value reaches the exporter, which
// refuses it, so the check above is not vacuous.
func TestConfigCheckCanFail(t *testing.T) {
	cfg := renderedConfig(t, renderCase{name: "bad op", args: []string{"--set", "config.modules.default.op=nosuch"}})
	if out, err := configCheck(t, cfg); err == nil {
		t.Fatalf("--config.check accepted op nosuch:\n%s", out)
	}
}
