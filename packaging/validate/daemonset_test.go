package validate

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// defaultRDMAResource is the device-plugin resource of the default values.
const defaultRDMAResource = "rdma/rdma_shared_device_a"

// problems collects what a check finds, so the checks themselves can be
// tested on broken objects.
type problems []string

func (p *problems) add(format string, args ...any) {
	*p = append(*p, fmt.Sprintf(format, args...))
}

func onlyDaemonSet(t *testing.T, objs []runtime.Object) *appsv1.DaemonSet {
	t.Helper()
	var found []*appsv1.DaemonSet
	for _, o := range objs {
		if ds, ok := o.(*appsv1.DaemonSet); ok {
			found = append(found, ds)
		}
	}
	if len(found) != 1 {
		t.Fatalf("want one DaemonSet, got %d", len(found))
	}
	return found[0]
}

// TestDaemonSetSecurity asserts the settings the chart promises in every
// case and for every Kubernetes version.
func TestDaemonSetSecurity(t *testing.T) {
	for _, c := range renderCases(t) {
		for _, kv := range kubeVersions {
			t.Run(c.name+"/"+kv, func(t *testing.T) {
				objs, err := decodeAll(render(t, c, kv))
				if err != nil {
					t.Fatal(err)
				}
				for _, msg := range daemonSetProblems(onlyDaemonSet(t, objs)) {
					t.Error(msg)
				}
			})
		}
	}
}

// daemonSetProblems lists every promise of the chart that ds breaks.
func daemonSetProblems(ds *appsv1.DaemonSet) []string {
	var p problems
	pod := ds.Spec.Template.Spec
	if !pod.HostNetwork {
		p.add("hostNetwork is not true")
	}
	if pod.DNSPolicy != corev1.DNSClusterFirstWithHostNet {
		p.add("dnsPolicy %q, want ClusterFirstWithHostNet", pod.DNSPolicy)
	}
	if pod.AutomountServiceAccountToken == nil || *pod.AutomountServiceAccountToken {
		p.add("automountServiceAccountToken is not false")
	}
	if s := ds.Spec.UpdateStrategy; s.Type != appsv1.RollingUpdateDaemonSetStrategyType || s.RollingUpdate == nil ||
		s.RollingUpdate.MaxUnavailable == nil || s.RollingUpdate.MaxUnavailable.IntValue() != 1 {
		p.add("updateStrategy %+v, want RollingUpdate with maxUnavailable 1", s)
	}
	if pod.TerminationGracePeriodSeconds == nil || *pod.TerminationGracePeriodSeconds < 10 {
		p.add("terminationGracePeriodSeconds is unset or under 10 s")
	}
	if !slices.ContainsFunc(pod.Tolerations, func(tl corev1.Toleration) bool {
		return tl.Operator == corev1.TolerationOpExists && tl.Effect == corev1.TaintEffectNoSchedule && tl.Key == ""
	}) {
		p.add("no toleration {operator: Exists, effect: NoSchedule} in %+v", pod.Tolerations)
	}
	if len(pod.NodeSelector) == 0 {
		p.add("no nodeSelector: the exporter would be scheduled on nodes without RDMA")
	}
	if ds.Spec.Template.Annotations["checksum/config"] == "" {
		p.add("no checksum/config pod annotation: a changed config would not roll the pods")
	}
	if len(pod.Containers) != 1 {
		p.add("want one container, got %d", len(pod.Containers))
		return p
	}
	ctr := pod.Containers[0]
	checkImage(&p, ctr.Image)
	checkContainerSecurity(&p, pod, ctr)
	checkVolumes(&p, pod, ctr)
	if ctr.LivenessProbe == nil || ctr.LivenessProbe.HTTPGet == nil {
		p.add("no HTTP liveness probe")
	}
	if ctr.Resources.Requests.Memory().IsZero() || ctr.Resources.Limits.Memory().IsZero() {
		p.add("memory request or limit unset")
	}
	if !slices.ContainsFunc(ctr.Args, func(a string) bool { return strings.HasPrefix(a, "--web.listen-address=[$(HOST_IP)]:") }) {
		p.add("the web server does not listen on the host IP only: args %q", ctr.Args)
	}
	if !slices.ContainsFunc(ctr.Env, func(e corev1.EnvVar) bool {
		return e.Name == "HOST_IP" && e.ValueFrom != nil && e.ValueFrom.FieldRef != nil && e.ValueFrom.FieldRef.FieldPath == "status.hostIP"
	}) {
		p.add("HOST_IP does not come from status.hostIP")
	}
	return p
}

func checkImage(p *problems, image string) {
	if strings.Contains(image, "@sha256:") {
		return
	}
	i := strings.LastIndex(image, ":")
	if i < 0 || i < strings.LastIndex(image, "/") {
		p.add("image %q has no tag (that means latest)", image)
		return
	}
	if tag := image[i+1:]; tag == "" || tag == "latest" {
		p.add("image %q: tag %q", image, tag)
	}
}

// checkContainerSecurity: exactly one of the device plugin's resource and
// privileged mode; IPC_LOCK the only capability; nothing writable.
func checkContainerSecurity(p *problems, pod corev1.PodSpec, ctr corev1.Container) {
	sc := ctr.SecurityContext
	if sc == nil {
		p.add("no container securityContext")
		return
	}
	privileged := sc.Privileged != nil && *sc.Privileged
	var rdmaResources []string
	for name := range ctr.Resources.Limits {
		if strings.HasPrefix(string(name), "rdma/") {
			rdmaResources = append(rdmaResources, string(name))
		}
	}
	switch {
	case privileged && len(rdmaResources) > 0:
		p.add("privileged and device-plugin resources %v at once", rdmaResources)
	case !privileged && len(rdmaResources) != 1:
		p.add("not privileged, so want one rdma/ resource limit, got %v", rdmaResources)
	}
	if !privileged {
		// Kubernetes refuses allowPrivilegeEscalation false on a
		// privileged container, so it is checked only without.
		if sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation {
			p.add("allowPrivilegeEscalation is not false")
		}
	}
	if c := sc.Capabilities; c == nil || !slices.Equal(c.Drop, []corev1.Capability{"ALL"}) || !slices.Equal(c.Add, []corev1.Capability{"IPC_LOCK"}) {
		p.add("capabilities %+v, want drop [ALL] add [IPC_LOCK]", c)
	}
	if sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem {
		p.add("readOnlyRootFilesystem is not true")
	}
	// IPC_LOCK only reaches the effective set of UID 0.
	if sc.RunAsUser == nil || *sc.RunAsUser != 0 {
		p.add("runAsUser is not 0")
	}
	seccomp := sc.SeccompProfile
	if seccomp == nil && pod.SecurityContext != nil {
		seccomp = pod.SecurityContext.SeccompProfile
	}
	if seccomp == nil || seccomp.Type != corev1.SeccompProfileTypeRuntimeDefault {
		p.add("seccompProfile %+v, want RuntimeDefault", seccomp)
	}
	if pod.HostPID || pod.HostIPC {
		p.add("hostPID or hostIPC set")
	}
}

// checkVolumes: /sys read-only from the host; /dev/infiniband from the
// host only when privileged; every mount but /dev/infiniband read-only.
func checkVolumes(p *problems, pod corev1.PodSpec, ctr corev1.Container) {
	privileged := ctr.SecurityContext != nil && ctr.SecurityContext.Privileged != nil && *ctr.SecurityContext.Privileged
	hostPaths := map[string]string{} // volume name -> host path
	for _, v := range pod.Volumes {
		if v.HostPath != nil {
			hostPaths[v.Name] = v.HostPath.Path
		}
	}
	sysMounted, devMounted := false, false
	for _, m := range ctr.VolumeMounts {
		hp, fromHost := hostPaths[m.Name]
		switch {
		case fromHost && hp == "/sys":
			sysMounted = true
			if !m.ReadOnly {
				p.add("host /sys mounted at %s read-write", m.MountPath)
			}
		case fromHost && hp == "/dev/infiniband":
			devMounted = true
		case fromHost:
			p.add("unexpected host path %s", hp)
		case !m.ReadOnly:
			p.add("volume %s mounted read-write", m.Name)
		}
	}
	if !sysMounted {
		p.add("host /sys is not mounted")
	}
	if devMounted != privileged {
		p.add("host /dev/infiniband mounted: %v, privileged: %v; they go together", devMounted, privileged)
	}
}

// TestPrivilegedFallback checks the privileged example really is the
// other mode, so the checks above see both.
func TestPrivilegedFallback(t *testing.T) {
	c := renderCase{name: "privileged", args: []string{"-f", chartDir(t) + "/examples/privileged.yaml"}}
	objs, err := decodeAll(render(t, c, kubeVersions[0]))
	if err != nil {
		t.Fatal(err)
	}
	ctr := onlyDaemonSet(t, objs).Spec.Template.Spec.Containers[0]
	if ctr.SecurityContext.Privileged == nil || !*ctr.SecurityContext.Privileged {
		t.Error("the privileged example does not run privileged")
	}
	objs, err = decodeAll(render(t, renderCase{name: "default"}, kubeVersions[0]))
	if err != nil {
		t.Fatal(err)
	}
	ctr = onlyDaemonSet(t, objs).Spec.Template.Spec.Containers[0]
	if q, ok := ctr.Resources.Limits[corev1.ResourceName(defaultRDMAResource)]; !ok || q.Value() != 1 {
		t.Errorf("the default values do not request one %s: limits %v", defaultRDMAResource, ctr.Resources.Limits)
	}
}

// TestDaemonSetChecksCatchBreakage proves each check can fail: one broken
// setting at a time on a good DaemonSet must be reported.
func TestDaemonSetChecksCatchBreakage(t *testing.T) {
	objs, err := decodeAll(render(t, renderCase{name: "default"}, kubeVersions[0]))
	if err != nil {
		t.Fatal(err)
	}
	good := onlyDaemonSet(t, objs)
	if p := daemonSetProblems(good); len(p) > 0 {
		t.Fatalf("the default DaemonSet has problems: %v", p)
	}
	ctr := func(ds *appsv1.DaemonSet) *corev1.Container { return &ds.Spec.Template.Spec.Containers[0] }
	yes, no := true, false
	breakages := map[string]func(ds *appsv1.DaemonSet){
		"hostNetwork off":        func(ds *appsv1.DaemonSet) { ds.Spec.Template.Spec.HostNetwork = false },
		"dnsPolicy ClusterFirst": func(ds *appsv1.DaemonSet) { ds.Spec.Template.Spec.DNSPolicy = corev1.DNSClusterFirst },
		"capability added": func(ds *appsv1.DaemonSet) {
			ctr(ds).SecurityContext.Capabilities.Add = append(ctr(ds).SecurityContext.Capabilities.Add, "NET_ADMIN")
		},
		"nothing dropped":          func(ds *appsv1.DaemonSet) { ctr(ds).SecurityContext.Capabilities.Drop = nil },
		"privilege escalation":     func(ds *appsv1.DaemonSet) { ctr(ds).SecurityContext.AllowPrivilegeEscalation = &yes },
		"writable root":            func(ds *appsv1.DaemonSet) { ctr(ds).SecurityContext.ReadOnlyRootFilesystem = &no },
		"writable /sys":            func(ds *appsv1.DaemonSet) { ctr(ds).VolumeMounts[1].ReadOnly = false },
		"no toleration":            func(ds *appsv1.DaemonSet) { ds.Spec.Template.Spec.Tolerations = nil },
		"privileged with resource": func(ds *appsv1.DaemonSet) { ctr(ds).SecurityContext.Privileged = &yes },
		"no rdma resource":         func(ds *appsv1.DaemonSet) { delete(ctr(ds).Resources.Limits, defaultRDMAResource) },
		"latest tag":               func(ds *appsv1.DaemonSet) { ctr(ds).Image = "rdmarun_exporter:latest" },
		"no tag":                   func(ds *appsv1.DaemonSet) { ctr(ds).Image = "registry:5000/rdmarun_exporter" },
		"OnDelete":                 func(ds *appsv1.DaemonSet) { ds.Spec.UpdateStrategy.Type = appsv1.OnDeleteDaemonSetStrategyType },
		"service account token":    func(ds *appsv1.DaemonSet) { ds.Spec.Template.Spec.AutomountServiceAccountToken = &yes },
	}
	for name, breakIt := range breakages {
		t.Run(name, func(t *testing.T) {
			ds := good.DeepCopy()
			breakIt(ds)
			if p := daemonSetProblems(ds); len(p) == 0 {
				t.Errorf("%s went unnoticed", name)
			}
		})
	}
}
