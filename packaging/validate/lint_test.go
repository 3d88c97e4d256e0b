package validate

import (
	"strings"
	"testing"
)

// TestHelmLintStrict runs `helm lint --strict` with the default values and
// with each example values file.
func TestHelmLintStrict(t *testing.T) {
	for _, c := range renderCases(t) {
		t.Run(c.name, func(t *testing.T) {
			out, err := helm(t, append([]string{"lint", "--strict", chartDir(t)}, c.args...)...)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(out, "1 chart(s) linted, 0 chart(s) failed") {
				t.Errorf("unexpected lint output:\n%s", out)
			}
		})
	}
}

// TestSchemaRejectsBadValues: a bad value fails install, lint and
// template with a message that names it. Combinations the schema cannot
// express are refused by a template's fail, which fails install and
// template; helm lint only logs a fail, so those are not linted.
func TestSchemaRejectsBadValues(t *testing.T) {
	for _, c := range []struct {
		set    []string
		want   string // in the error message
		byFail bool   // refused by a template, not the schema
	}{
		{[]string{"webPrt=1"}, "webPrt", false},
		{[]string{"rdma.privilegd=true"}, "privilegd", false},
		{[]string{"image.tag=latest"}, "/image/tag", false},
		{[]string{"webPort=70000"}, "/webPort", false},
		{[]string{"responder.portName=Not_A_Port_Name"}, "/responder/portName", false},
		{[]string{"rdma.privileged=true"}, "/rdma/resourceName", false},
		{[]string{"rdma.resourceName="}, "/rdma/resourceName", false},
		{[]string{"config.jitter=0.9"}, "/config/jitter", false},
		{[]string{"config.peerModule=nosuch"}, "config.peerModule", true},
		{[]string{"serviceMonitor.enabled=true", "podMonitor.enabled=true"}, "podMonitor.enabled", true},
		{[]string{"token.existingSecret=a", "token.value=b"}, "token.existingSecret", true},
		{[]string{"fleetJob.pattern=pairs"}, "/fleetJob/pattern", false},
		{[]string{"fleetJob.schedule=daily"}, "/fleetJob/schedule", false},
		{[]string{"fleetJob.confirm=-1"}, "/fleetJob/confirm", false},
		{[]string{"fleetJob.results.emptyDir.medium=Memory", "fleetJob.results.hostPath.path=/x"}, "/fleetJob/results", false},
		{[]string{"fleetJob.enabled=true"}, "token.existingSecret", true},
		{[]string{"token.value=x", "fleetJob.enabled=true", "fleetJob.pattern=ring", "fleetJob.bothDirections=true"}, "fleetJob.bothDirections", true},
		{[]string{"fleetJob.pattern=rail"}, "fleetJob.devices", true},
	} {
		t.Run(strings.Join(c.set, ","), func(t *testing.T) {
			var args []string
			for _, s := range c.set {
				args = append(args, "--set", s)
			}
			cmds := [][]string{{"template", releaseName, chartDir(t)}}
			if !c.byFail {
				cmds = append(cmds, []string{"lint", "--strict", chartDir(t)})
			}
			for _, cmd := range cmds {
				_, err := helm(t, append(cmd, args...)...)
				if err == nil {
					t.Fatalf("helm %s accepted %v", cmd[0], c.set)
				}
				if !strings.Contains(err.Error(), c.want) {
					t.Errorf("helm %s: the error does not name %q:\n%v", cmd[0], c.want, err)
				}
			}
		})
	}
}
