package validate

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/pod-security-admission/api"
	"k8s.io/pod-security-admission/policy"
)

// restrictedProblems is what the Pod Security Standards' restricted level
// of Kubernetes kubeVersion forbids in a pod template, judged by the
// admission controller's own checks; "" when it is admitted.
func restrictedProblems(t *testing.T, kubeVersion string, tmpl corev1.PodTemplateSpec) string {
	t.Helper()
	v, err := api.ParseVersion("v" + strings.Join(strings.Split(kubeVersion, ".")[:2], "."))
	if err != nil {
		t.Fatal(err)
	}
	eval, err := policy.NewEvaluator(policy.DefaultChecks(), nil)
	if err != nil {
		t.Fatal(err)
	}
	res := policy.AggregateCheckResults(eval.EvaluatePod(api.LevelVersion{Level: api.LevelRestricted, Version: v}, &tmpl.ObjectMeta, &tmpl.Spec))
	if res.Allowed {
		return ""
	}
	return res.ForbiddenDetail()
}

// TestFleetJobIsRestricted: the fleet Job's pod would be admitted where
// the restricted Pod Security Standard is enforced: the least privilege
// the chart promises for it, as the admission controller judges it, not
// as the chart's own checks above read the fields.
func TestFleetJobIsRestricted(t *testing.T) {
	for _, c := range []renderCase{fleetJobCase, fleetCronJobCase} {
		for _, kv := range kubeVersions {
			t.Run(c.name+"/"+kv, func(t *testing.T) {
				r := renderFleet(t, c, kv)
				if why := restrictedProblems(t, kv, r.job.Template); why != "" {
					t.Errorf("the restricted level forbids the fleet Job's pod: %s", why)
				}
			})
		}
	}
	// The check can fail: a capability added is refused.
	r := renderFleet(t, fleetJobCase, kubeVersions[0])
	tmpl := *r.job.Template.DeepCopy()
	tmpl.Spec.Containers[0].SecurityContext.Capabilities.Add = []corev1.Capability{"IPC_LOCK"}
	if why := restrictedProblems(t, kubeVersions[0], tmpl); !strings.Contains(why, "IPC_LOCK") {
		t.Errorf("IPC_LOCK added, yet the restricted level says %q", why)
	}
}
