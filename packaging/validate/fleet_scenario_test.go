package validate

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"
)

// fleetScenario is the shape of a fleet scenario as the chart writes it
// (hosts from DNS); decoding it strictly refuses any other key, peer:
// among them.
type fleetScenario struct {
	Name        string `json:"name"`
	Description string `json:"description"`
	Hosts       *struct {
		DNS  string `json:"dns"`
		Port int    `json:"port"`
	} `json:"hosts"`
	Devices        []string         `json:"devices"`
	Pattern        string           `json:"pattern"`
	BothDirections bool             `json:"both_directions"`
	Parallel       int              `json:"parallel"`
	Confirm        int              `json:"confirm"`
	TokenFile      string           `json:"token_file"`
	Cases          []map[string]any `json:"cases"`
}

// TestFleetScenario: the ConfigMap holds a fleet scenario that tests the
// nodes behind the headless Service, on the port their responders listen
// on, with the token the Job mounts beside it; and rdmarun's loader
// accepts the whole fleet, listed hosts standing in for the DNS name.
func TestFleetScenario(t *testing.T) {
	for _, c := range []renderCase{fleetJobCase, fleetCronJobCase,
		{name: "fleet-job-example", args: []string{"-f", filepath.Join(chartDir(t), "examples", "fleet-job.yaml")}}} {
		t.Run(c.name, func(t *testing.T) {
			r := renderFleet(t, c, kubeVersions[0])
			text := r.scenario.Data[fleetScenarioKey]
			var sc fleetScenario
			if err := yaml.UnmarshalStrict([]byte(text), &sc); err != nil {
				t.Fatalf("the scenario is not a fleet scenario: %v\n%s", err, text)
			}
			for _, msg := range fleetScenarioProblems(sc, r) {
				t.Error(msg)
			}
			dir := t.TempDir()
			file := filepath.Join(dir, fleetScenarioKey)
			if err := os.WriteFile(file, []byte(asListedFleet(t, text)), 0o600); err != nil {
				t.Fatal(err)
			}
			if out, err := rdmarunValidate(t, file); err != nil {
				t.Errorf("rdmarun validate refuses the scenario: %v\n%s\n%s", err, out, text)
			}
		})
	}
}

// fleetScenarioProblems checks the scenario against the objects that
// must agree with it.
func fleetScenarioProblems(sc fleetScenario, r fleetRender) []string {
	var p problems
	if sc.Name == "" {
		p.add("the scenario has no name")
	}
	if !slices.Contains([]string{"all-pairs", "ring", "rail", "incast"}, sc.Pattern) {
		p.add("pattern %q: not one the hosts of a DNS name can run", sc.Pattern)
	}
	if len(sc.Cases) == 0 {
		p.add("the scenario has no cases")
	}
	peers := headlessService(r.objs)
	switch {
	case sc.Hosts == nil:
		p.add("the scenario names no hosts")
	case peers == nil:
		p.add("no headless Service to find the hosts through")
	default:
		if want := peers.Name + "." + peers.Namespace + ".svc.cluster.local"; sc.Hosts.DNS != want {
			p.add("hosts.dns %q, want the headless Service's name %q", sc.Hosts.DNS, want)
		}
		if len(peers.Spec.Ports) != 1 || int(peers.Spec.Ports[0].Port) != sc.Hosts.Port {
			p.add("hosts.port %d is not the headless Service's port %v", sc.Hosts.Port, peers.Spec.Ports)
		}
		responder := slices.IndexFunc(r.ds.Spec.Template.Spec.Containers[0].Ports, func(cp corev1.ContainerPort) bool {
			return int(cp.ContainerPort) == sc.Hosts.Port && len(peers.Spec.Ports) == 1 && cp.Name == peers.Spec.Ports[0].TargetPort.StrVal
		})
		if responder < 0 {
			p.add("no port %d of the exporter's container is the headless Service's target", sc.Hosts.Port)
		}
	}
	pod := r.job.Template.Spec
	tokenFile, _, _ := fleetTokenFile(pod)
	scenarioFile := ""
	if args := pod.Containers[0].Args; len(args) > 1 {
		scenarioFile = args[1]
	}
	if path.Base(scenarioFile) != fleetScenarioKey {
		p.add("the Job runs %q, not the ConfigMap's %s", scenarioFile, fleetScenarioKey)
	}
	// token_file is relative to the scenario, as rdmarun reads it.
	got := sc.TokenFile
	if got != "" && !path.IsAbs(got) {
		got = path.Join(path.Dir(scenarioFile), got)
	}
	if tokenFile == "" || got != tokenFile {
		p.add("token_file %q is %q in the pod; the token is mounted at %q", sc.TokenFile, got, tokenFile)
	}
	return p
}

func headlessService(objs []runtime.Object) *corev1.Service {
	for _, svc := range findObjects[*corev1.Service](objs) {
		if svc.Spec.ClusterIP == corev1.ClusterIPNone {
			return svc
		}
	}
	return nil
}

// asListedFleet turns the fleet scenario into the same fleet over a
// listed four hosts, which the rdmarun of this tree loads whole (pattern,
// devices, confirm and cases alike): Load would resolve the scenario's
// DNS name, which exists only inside the cluster.
func asListedFleet(t *testing.T, text string) string {
	t.Helper()
	var doc map[string]any
	if err := yaml.Unmarshal([]byte(text), &doc); err != nil {
		t.Fatal(err)
	}
	doc["hosts"] = []string{"node1", "node2", "node3", "node4"}
	out, err := yaml.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	return string(out)
}

var (
	rdmarunOnce sync.Once
	rdmarunPath string
	rdmarunErr  error
)

// rdmarunBinary is $RDMARUN_BIN, or rdmarun built from the main module
// into a temporary directory.
func rdmarunBinary(t *testing.T) string {
	t.Helper()
	rdmarunOnce.Do(func() {
		if p := os.Getenv("RDMARUN_BIN"); p != "" {
			rdmarunPath = p
			return
		}
		rdmarunPath = filepath.Join(buildDir, "rdmarun")
		ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, "go", "build", "-o", rdmarunPath, "./cmd/rdmarun")
		cmd.Dir = repoRoot(t)
		if out, err := cmd.CombinedOutput(); err != nil {
			rdmarunErr = &cmdError{args: cmd.Args, err: err, stderr: string(out)}
		}
	})
	if rdmarunErr != nil {
		t.Fatal(rdmarunErr)
	}
	return rdmarunPath
}

// rdmarunValidate runs `rdmarun validate FILE`.
func rdmarunValidate(t *testing.T, file string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, rdmarunBinary(t), "validate", file)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	return out.String(), err
}

// rdmarunRunHelp is `rdmarun run --help`: the flags rdmarun run has.
func rdmarunRunHelp(t *testing.T) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, rdmarunBinary(t), "run", "--help")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		t.Fatalf("rdmarun run --help: %v\n%s", err, out.String())
	}
	return out.String()
}

// TestFleetScenarioChecksCanFail: a case rdmarun does not know, a scenario
// key the fleet shape does not have, and hosts elsewhere than the
// headless Service are each refused.
func TestFleetScenarioChecksCanFail(t *testing.T) {
	r := renderFleet(t, renderCase{name: "bad case", args: append(slices.Clone(fleetJobCase.args),
		"--set", "fleetJob.cases[0].name=x", "--set", "fleetJob.cases[0].op=nosuch")}, kubeVersions[0])
	file := filepath.Join(t.TempDir(), fleetScenarioKey)
	if err := os.WriteFile(file, []byte(asListedFleet(t, r.scenario.Data[fleetScenarioKey])), 0o600); err != nil {
		t.Fatal(err)
	}
	if out, err := rdmarunValidate(t, file); err == nil || !strings.Contains(out, "nosuch") {
		t.Errorf("rdmarun validate accepted op nosuch, or did not name it (%v):\n%s", err, out)
	}

	good := renderFleet(t, fleetJobCase, kubeVersions[0])
	text := good.scenario.Data[fleetScenarioKey]
	var sc fleetScenario
	if err := yaml.UnmarshalStrict([]byte(text+"peer: node1\n"), &sc); err == nil {
		t.Error("a scenario with peer: decoded as a fleet scenario")
	}
	if err := yaml.UnmarshalStrict([]byte(text), &sc); err != nil {
		t.Fatal(err)
	}
	if p := fleetScenarioProblems(sc, good); len(p) > 0 {
		t.Fatalf("the good scenario has problems: %v", p)
	}
	for name, breakIt := range map[string]func(s *fleetScenario){
		"another name":  func(s *fleetScenario) { s.Hosts.DNS = "rdmarun.rdmarun.svc.cluster.local" },
		"another port":  func(s *fleetScenario) { s.Hosts.Port = 18521 },
		"no hosts":      func(s *fleetScenario) { s.Hosts = nil },
		"another token": func(s *fleetScenario) { s.TokenFile = "/etc/rdmarun/token" },
		"pairs":         func(s *fleetScenario) { s.Pattern = "pairs" },
		"no cases":      func(s *fleetScenario) { s.Cases = nil },
	} {
		t.Run(name, func(t *testing.T) {
			var broken fleetScenario
			if err := yaml.UnmarshalStrict([]byte(text), &broken); err != nil {
				t.Fatal(err)
			}
			breakIt(&broken)
			if p := fleetScenarioProblems(broken, good); len(p) == 0 {
				t.Errorf("%s went unnoticed", name)
			}
		})
	}
}
