package validate

import (
	"path/filepath"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// tokenMount finds where the DaemonSet mounts a Secret's key as the token
// file: the Secret's name and key, and the file's path in the container.
func tokenMount(t *testing.T, c renderCase) (secret, key, path string, secrets []*corev1.Secret) {
	t.Helper()
	objs, err := decodeAll(render(t, c, kubeVersions[0]))
	if err != nil {
		t.Fatal(err)
	}
	pod := onlyDaemonSet(t, objs).Spec.Template.Spec
	for _, v := range pod.Volumes {
		if v.Projected == nil {
			continue
		}
		for _, src := range v.Projected.Sources {
			if src.Secret == nil {
				continue
			}
			for _, m := range pod.Containers[0].VolumeMounts {
				if m.Name == v.Name {
					for _, item := range src.Secret.Items {
						if item.Mode == nil || *item.Mode != 0o400 {
							t.Errorf("token file mode %v, want 0400", item.Mode)
						}
						return src.Secret.Name, item.Key, filepath.Join(m.MountPath, item.Path), findObjects[*corev1.Secret](objs)
					}
				}
			}
		}
	}
	return "", "", "", findObjects[*corev1.Secret](objs)
}

// TestTokenFromSecret: the token file is at the path the config names,
// from the named Secret or from the one the chart makes; with neither,
// nothing is mounted.
func TestTokenFromSecret(t *testing.T) {
	secret, key, path, secrets := tokenMount(t, renderCase{name: "existing", args: []string{"--set", "token.existingSecret=fleet-token"}})
	if secret != "fleet-token" || key != "token" || path != tokenPath {
		t.Errorf("existing Secret: mounted %s key %s at %s, want fleet-token key token at %s", secret, key, path, tokenPath)
	}
	if len(secrets) != 0 {
		t.Errorf("the chart made %d Secrets though one exists", len(secrets))
	}

	secret, key, path, secrets = tokenMount(t, renderCase{name: "value", args: []string{"--set", "token.value=s3cret"}})
	if len(secrets) != 1 || secrets[0].Name != secret || string(secrets[0].Data[key]) != "s3cret" || path != tokenPath {
		t.Errorf("token value: mounted %s key %s at %s; Secrets %v", secret, key, path, secrets)
	}

	if secret, _, _, secrets = tokenMount(t, renderCase{name: "default"}); secret != "" || len(secrets) != 0 {
		t.Errorf("no token given, yet Secret %q is mounted (%d made)", secret, len(secrets))
	}
}
