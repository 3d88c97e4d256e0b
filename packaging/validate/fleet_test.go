package validate

import (
	"fmt"
	"path"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
)

// The fleet run rendered as a Job and as a CronJob.
var (
	fleetJobCase = renderCase{name: "fleet-job", args: []string{"--set", "token.existingSecret=rdmarun-token",
		"--set", "fleetJob.enabled=true"}}
	fleetCronJobCase = renderCase{name: "fleet-cronjob", args: []string{"--set", "token.value=0123456789abcdef",
		"--set", "fleetJob.enabled=true", "--set", "fleetJob.schedule=@daily"}}
)

// fleetRender is what the fleet checks need from one render.
type fleetRender struct {
	objs     []runtime.Object
	job      batchv1.JobSpec // the Job's, or the CronJob's jobTemplate
	scenario *corev1.ConfigMap
	ds       *appsv1.DaemonSet
}

func renderFleet(t *testing.T, c renderCase, kubeVersion string) fleetRender {
	t.Helper()
	objs, err := decodeAll(render(t, c, kubeVersion))
	if err != nil {
		t.Fatal(err)
	}
	return fleetOf(t, objs)
}

// fleetOf finds the one Job or CronJob and the fleet ConfigMap it mounts.
func fleetOf(t *testing.T, objs []runtime.Object) fleetRender {
	t.Helper()
	r := fleetRender{objs: objs, ds: onlyDaemonSet(t, objs)}
	jobs, crons := findObjects[*batchv1.Job](objs), findObjects[*batchv1.CronJob](objs)
	switch {
	case len(jobs) == 1 && len(crons) == 0:
		r.job = jobs[0].Spec
	case len(jobs) == 0 && len(crons) == 1:
		r.job = crons[0].Spec.JobTemplate.Spec
	default:
		t.Fatalf("want one Job or one CronJob, got %v", kindsOf(objs))
	}
	for _, cm := range findObjects[*corev1.ConfigMap](objs) {
		if _, ok := cm.Data[fleetScenarioKey]; ok {
			if r.scenario != nil {
				t.Fatalf("two ConfigMaps hold %s", fleetScenarioKey)
			}
			r.scenario = cm
		}
	}
	if r.scenario == nil {
		t.Fatalf("no ConfigMap holds %s: %v", fleetScenarioKey, kindsOf(objs))
	}
	return r
}

// TestFleetJobOffByDefault: the default values run no fleet Job.
func TestFleetJobOffByDefault(t *testing.T) {
	objs, err := decodeAll(render(t, renderCase{name: "default"}, kubeVersions[0]))
	if err != nil {
		t.Fatal(err)
	}
	if n := len(findObjects[*batchv1.Job](objs)) + len(findObjects[*batchv1.CronJob](objs)); n != 0 {
		t.Errorf("the default values render %d fleet Jobs: %v", n, kindsOf(objs))
	}
}

// TestFleetJob: the Job and the CronJob decode strictly for every
// Kubernetes version and keep every promise of the chart.
func TestFleetJob(t *testing.T) {
	for _, c := range []renderCase{fleetJobCase, fleetCronJobCase} {
		for _, kv := range kubeVersions {
			t.Run(c.name+"/"+kv, func(t *testing.T) {
				r := renderFleet(t, c, kv)
				for _, msg := range fleetJobProblems(r) {
					t.Error(msg)
				}
			})
		}
	}
}

// fleetJobProblems lists every promise of the chart that the fleet run
// breaks: one attempt, bounded and cleaned up; unprivileged, with no
// device and nothing of the host; the DaemonSet's image; the scenario and
// the token read-only, the reports on their own volume; and pods that no
// Service or the DaemonSet mistakes for an exporter.
func fleetJobProblems(r fleetRender) []string {
	var p problems
	spec := r.job
	if spec.BackoffLimit == nil || *spec.BackoffLimit != 0 {
		p.add("backoffLimit %v, want 0: a rerun would judge the fabric twice", spec.BackoffLimit)
	}
	if spec.ActiveDeadlineSeconds == nil || *spec.ActiveDeadlineSeconds <= 0 {
		p.add("no activeDeadlineSeconds: a stuck run would hold the Job forever")
	}
	if spec.TTLSecondsAfterFinished == nil {
		p.add("no ttlSecondsAfterFinished: finished Jobs would pile up")
	}
	pod := spec.Template.Spec
	if pod.RestartPolicy != corev1.RestartPolicyNever {
		p.add("restartPolicy %q, want Never", pod.RestartPolicy)
	}
	if pod.HostNetwork || pod.HostPID || pod.HostIPC {
		p.add("hostNetwork, hostPID or hostIPC set: the coordinator needs nothing of the node")
	}
	if pod.AutomountServiceAccountToken == nil || *pod.AutomountServiceAccountToken {
		p.add("automountServiceAccountToken is not false")
	}
	for _, v := range pod.Volumes {
		if v.HostPath != nil {
			p.add("host path %s mounted", v.HostPath.Path)
		}
	}
	checkFleetSelectors(&p, r)
	if len(pod.Containers) != 1 {
		p.add("want one container, got %d", len(pod.Containers))
		return p
	}
	ctr := pod.Containers[0]
	checkImage(&p, ctr.Image)
	if want := r.ds.Spec.Template.Spec.Containers[0].Image; ctr.Image != want {
		p.add("image %q, want the DaemonSet's %q", ctr.Image, want)
	}
	checkFleetSecurity(&p, pod, ctr)
	for name := range ctr.Resources.Limits {
		if strings.HasPrefix(string(name), "rdma/") {
			p.add("requests the RDMA resource %s: the coordinator carries no RDMA traffic", name)
		}
	}
	if ctr.Resources.Requests.Memory().IsZero() || ctr.Resources.Limits.Memory().IsZero() {
		p.add("memory request or limit unset")
	}
	checkFleetCommand(&p, pod, ctr, spec)
	return p
}

// checkFleetSecurity: a non-root user with no capability at all, nothing
// writable but the reports.
func checkFleetSecurity(p *problems, pod corev1.PodSpec, ctr corev1.Container) {
	psc := pod.SecurityContext
	if psc == nil {
		psc = &corev1.PodSecurityContext{}
	}
	sc := ctr.SecurityContext
	if sc == nil {
		p.add("no container securityContext")
		return
	}
	user := sc.RunAsUser
	if user == nil {
		user = psc.RunAsUser
	}
	if user == nil || *user == 0 {
		p.add("runs as root (runAsUser %v)", user)
	}
	nonRoot := sc.RunAsNonRoot
	if nonRoot == nil {
		nonRoot = psc.RunAsNonRoot
	}
	if nonRoot == nil || !*nonRoot {
		p.add("runAsNonRoot is not true")
	}
	if sc.Privileged != nil && *sc.Privileged {
		p.add("privileged")
	}
	if sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation {
		p.add("allowPrivilegeEscalation is not false")
	}
	if c := sc.Capabilities; c == nil || !slices.Equal(c.Drop, []corev1.Capability{"ALL"}) || len(c.Add) > 0 {
		p.add("capabilities %+v, want drop [ALL] and nothing added", c)
	}
	if sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem {
		p.add("readOnlyRootFilesystem is not true")
	}
	seccomp := sc.SeccompProfile
	if seccomp == nil {
		seccomp = psc.SeccompProfile
	}
	if seccomp == nil || seccomp.Type != corev1.SeccompProfileTypeRuntimeDefault {
		p.add("seccompProfile %+v, want RuntimeDefault", seccomp)
	}
}

// checkFleetCommand: rdmarun runs the scenario from a read-only mount
// and writes each report onto a writable mount other than the scenario's.
func checkFleetCommand(p *problems, pod corev1.PodSpec, ctr corev1.Container, spec batchv1.JobSpec) {
	if !slices.Equal(ctr.Command, []string{"/usr/bin/rdmarun"}) {
		p.add("command %q, want [/usr/bin/rdmarun]", ctr.Command)
	}
	if len(ctr.Args) < 2 || ctr.Args[0] != "run" {
		p.add("args %q, want run and the scenario", ctr.Args)
		return
	}
	if m := mountOf(ctr, ctr.Args[1]); m == nil || !m.ReadOnly || m.Name != fleetScenarioVolume(pod) {
		p.add("the scenario %s is not on the read-only scenario volume: %+v", ctr.Args[1], m)
	}
	checkFleetWait(p, ctr, spec)
	for _, flag := range []string{"--json=", "--junit=", "--html="} {
		i := slices.IndexFunc(ctr.Args, func(a string) bool { return strings.HasPrefix(a, flag) })
		if i < 0 {
			p.add("no %s in args %q", strings.TrimSuffix(flag, "="), ctr.Args)
			continue
		}
		file := strings.TrimPrefix(ctr.Args[i], flag)
		if m := mountOf(ctr, file); m == nil || m.ReadOnly || m.Name == fleetScenarioVolume(pod) {
			p.add("%s is not on a writable volume of its own: %+v", file, m)
		}
	}
}

// checkFleetWait: the Job waits for the responders that start beside it,
// for a time that leaves the run most of its deadline.
func checkFleetWait(p *problems, ctr corev1.Container, spec batchv1.JobSpec) {
	const flag = "--wait-for-responders="
	i := slices.IndexFunc(ctr.Args, func(a string) bool { return strings.HasPrefix(a, flag) })
	if i < 0 {
		p.add("no %s in args %q: a Job started beside the DaemonSet would test nodes whose responders do not listen yet", strings.TrimSuffix(flag, "="), ctr.Args)
		return
	}
	d, err := time.ParseDuration(strings.TrimPrefix(ctr.Args[i], flag))
	switch {
	case err != nil:
		p.add("%s: %v", ctr.Args[i], err)
	case d <= 0:
		p.add("%s waits for nothing", ctr.Args[i])
	case spec.ActiveDeadlineSeconds != nil && d > time.Duration(*spec.ActiveDeadlineSeconds)*time.Second/2:
		p.add("%s takes more than half of activeDeadlineSeconds %d", ctr.Args[i], *spec.ActiveDeadlineSeconds)
	}
}

// fleetScenarioKey is the ConfigMap key, and the file, of the scenario.
const fleetScenarioKey = "fleet.yaml"

// fleetScenarioVolume is the volume that projects the scenario, or "".
func fleetScenarioVolume(pod corev1.PodSpec) string {
	for _, v := range pod.Volumes {
		if v.Projected == nil {
			continue
		}
		for _, src := range v.Projected.Sources {
			if src.ConfigMap != nil && slices.ContainsFunc(src.ConfigMap.Items, func(k corev1.KeyToPath) bool { return k.Key == fleetScenarioKey }) {
				return v.Name
			}
		}
	}
	return ""
}

// mountOf is the mount that holds file, the deepest when mounts nest.
func mountOf(ctr corev1.Container, file string) *corev1.VolumeMount {
	var best *corev1.VolumeMount
	for i, m := range ctr.VolumeMounts {
		if strings.HasPrefix(file, strings.TrimSuffix(m.MountPath, "/")+"/") && (best == nil || len(m.MountPath) > len(best.MountPath)) {
			best = &ctr.VolumeMounts[i]
		}
	}
	return best
}

// checkFleetSelectors: the coordinator's pods match no Service's selector
// (the headless one would list the coordinator as a host to test) and not
// the DaemonSet's.
func checkFleetSelectors(p *problems, r fleetRender) {
	podLabels := labels.Set(r.job.Template.Labels)
	for _, svc := range findObjects[*corev1.Service](r.objs) {
		if len(svc.Spec.Selector) > 0 && labels.SelectorFromSet(svc.Spec.Selector).Matches(podLabels) {
			p.add("Service %s selects the fleet Job's pods (labels %v)", svc.Name, podLabels)
		}
	}
	if sel := r.ds.Spec.Selector; sel != nil && labels.SelectorFromSet(sel.MatchLabels).Matches(podLabels) {
		p.add("the DaemonSet's selector matches the fleet Job's pods (labels %v)", podLabels)
	}
}

// TestFleetJobChecksCatchBreakage proves each check can fail: one broken
// setting at a time on a good Job must be reported.
func TestFleetJobChecksCatchBreakage(t *testing.T) {
	good := renderFleet(t, fleetJobCase, kubeVersions[0])
	if p := fleetJobProblems(good); len(p) > 0 {
		t.Fatalf("the fleet Job has problems: %v", p)
	}
	ctr := func(s *batchv1.JobSpec) *corev1.Container { return &s.Template.Spec.Containers[0] }
	yes, one, root := true, int32(1), int64(0)
	breakages := map[string]func(s *batchv1.JobSpec){
		"retries":              func(s *batchv1.JobSpec) { s.BackoffLimit = &one },
		"no deadline":          func(s *batchv1.JobSpec) { s.ActiveDeadlineSeconds = nil },
		"kept forever":         func(s *batchv1.JobSpec) { s.TTLSecondsAfterFinished = nil },
		"restarts":             func(s *batchv1.JobSpec) { s.Template.Spec.RestartPolicy = corev1.RestartPolicyOnFailure },
		"host network":         func(s *batchv1.JobSpec) { s.Template.Spec.HostNetwork = true },
		"root":                 func(s *batchv1.JobSpec) { ctr(s).SecurityContext.RunAsUser = &root },
		"capability added":     func(s *batchv1.JobSpec) { ctr(s).SecurityContext.Capabilities.Add = []corev1.Capability{"IPC_LOCK"} },
		"privilege escalation": func(s *batchv1.JobSpec) { ctr(s).SecurityContext.AllowPrivilegeEscalation = &yes },
		"writable root":        func(s *batchv1.JobSpec) { ctr(s).SecurityContext.ReadOnlyRootFilesystem = nil },
		"another image":        func(s *batchv1.JobSpec) { ctr(s).Image = "rdmarun:0.0.9" },
		"service account":      func(s *batchv1.JobSpec) { s.Template.Spec.AutomountServiceAccountToken = &yes },
		"exporter labels": func(s *batchv1.JobSpec) {
			s.Template.Labels = good.ds.Spec.Template.Labels
		},
		"rdma resource": func(s *batchv1.JobSpec) {
			ctr(s).Resources.Limits[corev1.ResourceName(defaultRDMAResource)] = ctr(s).Resources.Limits.Memory().DeepCopy()
		},
		"writable scenario": func(s *batchv1.JobSpec) { ctr(s).VolumeMounts[0].ReadOnly = false },
		"no junit":          func(s *batchv1.JobSpec) { ctr(s).Args = slices.DeleteFunc(ctr(s).Args, isFlag("--junit=")) },
		"no wait": func(s *batchv1.JobSpec) {
			ctr(s).Args = slices.DeleteFunc(ctr(s).Args, isFlag("--wait-for-responders="))
		},
		"a wait of nothing": func(s *batchv1.JobSpec) { setFlag(ctr(s), "--wait-for-responders=", "0s") },
		"a wait not a time": func(s *batchv1.JobSpec) { setFlag(ctr(s), "--wait-for-responders=", "5") },
		"a wait of the whole deadline": func(s *batchv1.JobSpec) {
			setFlag(ctr(s), "--wait-for-responders=", fmt.Sprintf("%ds", *s.ActiveDeadlineSeconds))
		},
		"report on the scenario volume": func(s *batchv1.JobSpec) {
			ctr(s).Args = append(slices.DeleteFunc(ctr(s).Args, isFlag("--json=")), "--json=/scenario/report.json")
		},
	}
	for name, breakIt := range breakages {
		t.Run(name, func(t *testing.T) {
			r := good
			r.job = *good.job.DeepCopy()
			breakIt(&r.job)
			if p := fleetJobProblems(r); len(p) == 0 {
				t.Errorf("%s went unnoticed", name)
			}
		})
	}
}

// setFlag gives the flag of prefix another value.
func setFlag(c *corev1.Container, prefix, value string) {
	c.Args = append(slices.DeleteFunc(c.Args, isFlag(prefix)), prefix+value)
}

// TestFleetJobWait: the wait follows fleetJob.waitForResponders, and ""
// turns it off; the flags the Job gives rdmarun are all flags of
// rdmarun run.
func TestFleetJobWait(t *testing.T) {
	for value, want := range map[string]string{"90s": "--wait-for-responders=90s", "": ""} {
		r := renderFleet(t, renderCase{name: "wait " + value, args: append(slices.Clone(fleetJobCase.args), "--set", "fleetJob.waitForResponders="+value)}, kubeVersions[0])
		args := r.job.Template.Spec.Containers[0].Args
		i := slices.IndexFunc(args, isFlag("--wait-for-responders="))
		switch {
		case want == "" && i >= 0:
			t.Errorf("waitForResponders %q: args %q, want no wait", value, args)
		case want != "" && (i < 0 || args[i] != want):
			t.Errorf("waitForResponders %q: args %q, want %s", value, args, want)
		}
	}
	if _, err := helm(t, append([]string{"template", releaseName, chartDir(t)}, append(slices.Clone(fleetJobCase.args), "--set", "fleetJob.waitForResponders=soon")...)...); err == nil || !strings.Contains(err.Error(), "waitForResponders") {
		t.Errorf("waitForResponders soon: %v, want the schema to refuse it", err)
	}

	r := renderFleet(t, fleetJobCase, kubeVersions[0])
	help := rdmarunRunHelp(t)
	for _, a := range r.job.Template.Spec.Containers[0].Args {
		if name, _, _ := strings.Cut(a, "="); strings.HasPrefix(name, "--") && !strings.Contains(help, name+"=") && !strings.Contains(help, name+" ") {
			t.Errorf("the Job passes %s, which rdmarun run does not have:\n%s", name, help)
		}
	}
}

func isFlag(prefix string) func(string) bool {
	return func(a string) bool { return strings.HasPrefix(a, prefix) }
}

// TestFleetJobRejectsMisspelledFields: the strict decoding that the fleet
// objects pass above fails on a misspelt field of the Job, the CronJob or
// the scenario's ConfigMap, naming it.
func TestFleetJobRejectsMisspelledFields(t *testing.T) {
	for _, c := range []struct {
		render   renderCase
		from, to string
	}{
		{fleetJobCase, "backoffLimit: 0", "backofLimit: 0"},
		{fleetJobCase, "ttlSecondsAfterFinished:", "ttlSecondAfterFinished:"},
		{fleetJobCase, "restartPolicy: Never", "restartPolicyy: Never"},
		{fleetJobCase, "runAsNonRoot: true", "runAsNonroot: true"},
		{fleetJobCase, "data:\n  " + fleetScenarioKey, "datas:\n  " + fleetScenarioKey},
		{fleetCronJobCase, "concurrencyPolicy: Forbid", "concurencyPolicy: Forbid"},
		{fleetCronJobCase, "jobTemplate:", "jobTemplates:"},
	} {
		t.Run(c.to, func(t *testing.T) {
			manifest := render(t, c.render, kubeVersions[len(kubeVersions)-1])
			if !strings.Contains(manifest, c.from) {
				t.Fatalf("the render has no %q to misspell", c.from)
			}
			_, err := decodeAll(strings.Replace(manifest, c.from, c.to, 1))
			if err == nil {
				t.Fatalf("%q decoded without error", c.to)
			}
			field := strings.TrimSpace(strings.SplitN(c.to, ":", 2)[0])
			if !strings.Contains(err.Error(), field) {
				t.Errorf("the error does not name %q: %v", field, err)
			}
		})
	}
}

// fleetTokenFile is where the Job's pod finds the Secret's key, and which
// Secret and key: "" when the scenario volume projects none.
func fleetTokenFile(pod corev1.PodSpec) (file, secret, key string) {
	vol := fleetScenarioVolume(pod)
	var mountPath string
	for _, m := range pod.Containers[0].VolumeMounts {
		if m.Name == vol {
			mountPath = m.MountPath
		}
	}
	for _, v := range pod.Volumes {
		if v.Name != vol {
			continue
		}
		for _, src := range v.Projected.Sources {
			if src.Secret != nil && len(src.Secret.Items) == 1 {
				return path.Join(mountPath, src.Secret.Items[0].Path), src.Secret.Name, src.Secret.Items[0].Key
			}
		}
	}
	return "", "", ""
}

// daemonSetTokenSource is the Secret and key the DaemonSet's responder
// reads its token from.
func daemonSetTokenSource(ds *appsv1.DaemonSet) (secret, key string) {
	for _, v := range ds.Spec.Template.Spec.Volumes {
		if v.Projected == nil {
			continue
		}
		for _, src := range v.Projected.Sources {
			if src.Secret != nil && len(src.Secret.Items) == 1 {
				return src.Secret.Name, src.Secret.Items[0].Key
			}
		}
	}
	return "", ""
}

// TestFleetJobUsesTheRespondersToken: the Job reads the token the
// responders prove, from the same Secret and key, whether the Secret is
// the user's or the chart's.
func TestFleetJobUsesTheRespondersToken(t *testing.T) {
	for _, c := range []renderCase{fleetJobCase, fleetCronJobCase} {
		t.Run(c.name, func(t *testing.T) {
			r := renderFleet(t, c, kubeVersions[0])
			file, secret, key := fleetTokenFile(r.job.Template.Spec)
			dsSecret, dsKey := daemonSetTokenSource(r.ds)
			if file == "" || dsSecret == "" || secret != dsSecret || key != dsKey {
				t.Errorf("the Job reads Secret %q key %q at %q; the responders read Secret %q key %q", secret, key, file, dsSecret, dsKey)
			}
		})
	}
}

// TestFleetJobNeedsToken: without a token the chart refuses the Job, and
// says which values give one.
func TestFleetJobNeedsToken(t *testing.T) {
	_, err := helm(t, "template", releaseName, chartDir(t), "--set", "fleetJob.enabled=true")
	if err == nil {
		t.Fatal("a fleet Job without a token rendered")
	}
	if !strings.Contains(err.Error(), "token.existingSecret") {
		t.Errorf("the error does not say how to give a token: %v", err)
	}
}
