package deploy

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"
)

// nonRootID is the uid and gid of both images (deploy/Dockerfile's USER).
const nonRootID = 65532

// object is one decoded manifest document.
type object struct {
	kind string
	pod  *corev1.PodTemplateSpec // the pod it runs, if any
	obj  any
}

// decode splits a manifest file into its documents and decodes each,
// strictly, into the type of the kind it claims: an unknown kind or field
// is an error.
func decode(data []byte) ([]object, error) {
	var out []object
	for i, doc := range splitDocuments(data) {
		var tm metav1.TypeMeta
		if err := yaml.Unmarshal(doc, &tm); err != nil {
			return nil, fmt.Errorf("document %d: %v", i, err)
		}
		o := object{kind: tm.APIVersion + " " + tm.Kind}
		switch o.kind {
		case "apps/v1 Deployment":
			var d appsv1.Deployment
			o.obj, o.pod = &d, &d.Spec.Template
		case "v1 Service":
			o.obj = new(corev1.Service)
		case "agones.dev/v1 Fleet":
			var f fleet
			o.obj, o.pod = &f, &f.Spec.Template.Spec.Template
		default:
			return nil, fmt.Errorf("document %d: kind %q: not one this test knows", i, o.kind)
		}
		// As the API server decodes: field names case-sensitive, no
		// unknown or duplicate fields.
		js, err := yaml.YAMLToJSONStrict(doc)
		if err != nil {
			return nil, fmt.Errorf("document %d (%s): %v", i, o.kind, err)
		}
		strict, err := kjson.UnmarshalStrict(js, o.obj)
		if err != nil {
			return nil, fmt.Errorf("document %d (%s): %v", i, o.kind, err)
		}
		if len(strict) > 0 {
			return nil, fmt.Errorf("document %d (%s): %v", i, o.kind, errors.Join(strict...))
		}
		out = append(out, o)
	}
	return out, nil
}

// splitDocuments splits YAML at its "---" lines, dropping empty documents.
func splitDocuments(data []byte) [][]byte {
	var docs [][]byte
	for _, d := range bytes.Split(append([]byte("\n"), data...), []byte("\n---")) {
		if len(bytes.TrimSpace(stripComments(d))) > 0 {
			docs = append(docs, d)
		}
	}
	return docs
}

func stripComments(d []byte) []byte {
	var b bytes.Buffer
	for line := range bytes.Lines(d) {
		if !bytes.HasPrefix(bytes.TrimSpace(line), []byte("#")) {
			b.Write(line)
		}
	}
	return b.Bytes()
}

// checkNonRoot says what keeps the kubelet from verifying that pod runs
// as non-root: runAsNonRoot with a numeric, non-zero user and group, set
// on the pod or on every container.
func checkNonRoot(pod *corev1.PodTemplateSpec) []string {
	var errs []string
	psc := pod.Spec.SecurityContext
	if psc == nil {
		psc = &corev1.PodSecurityContext{}
	}
	if len(pod.Spec.Containers) == 0 {
		errs = append(errs, "no containers")
	}
	for _, c := range pod.Spec.Containers {
		nonRoot, user, group := psc.RunAsNonRoot, psc.RunAsUser, psc.RunAsGroup
		if sc := c.SecurityContext; sc != nil {
			nonRoot, user, group = cmpOr(sc.RunAsNonRoot, nonRoot), cmpOr(sc.RunAsUser, user), cmpOr(sc.RunAsGroup, group)
		}
		switch {
		case nonRoot == nil || !*nonRoot:
			errs = append(errs, fmt.Sprintf("container %s: runAsNonRoot is not true", c.Name))
		case user == nil || *user != nonRootID:
			errs = append(errs, fmt.Sprintf("container %s: runAsUser %v; want %d, numeric, the image's USER", c.Name, deref(user), nonRootID))
		case group == nil || *group != nonRootID:
			errs = append(errs, fmt.Sprintf("container %s: runAsGroup %v; want %d", c.Name, deref(group), nonRootID))
		}
	}
	return errs
}

func cmpOr[T any](a, b *T) *T {
	if a != nil {
		return a
	}
	return b
}

func deref(p *int64) any {
	if p == nil {
		return "unset"
	}
	return *p
}

func mustDecode(t *testing.T, file string) []object {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	objs, err := decode(data)
	if err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	return objs
}

// TestManifests: each manifest decodes strictly as the kinds it claims,
// its pods run as the images' numeric non-root user, and the parts agree
// (the Service selects the Deployment's pods on a port they name; the
// Fleet's game port is a container port).
func TestManifests(t *testing.T) {
	kinds := map[string][]string{
		"fleet.yaml": {"agones.dev/v1 Fleet"},
		"token.yaml": {"apps/v1 Deployment", "v1 Service"},
	}
	for file, want := range kinds {
		objs := mustDecode(t, file)
		var got []string
		for _, o := range objs {
			got = append(got, o.kind)
			if o.pod != nil {
				for _, e := range checkNonRoot(o.pod) {
					t.Errorf("%s: %s: %s", file, o.kind, e)
				}
			}
		}
		if !slices.Equal(got, want) {
			t.Errorf("%s: kinds %v; want %v", file, got, want)
		}
	}

	token := mustDecode(t, "token.yaml")
	dep, svc := token[0].obj.(*appsv1.Deployment), token[1].obj.(*corev1.Service)
	labels := dep.Spec.Template.Labels
	for k, v := range dep.Spec.Selector.MatchLabels {
		if labels[k] != v {
			t.Errorf("token.yaml: the Deployment's selector %s=%s does not match its pods' labels %v", k, v, labels)
		}
	}
	for k, v := range svc.Spec.Selector {
		if labels[k] != v {
			t.Errorf("token.yaml: the Service's selector %s=%s does not match the pods' labels %v", k, v, labels)
		}
	}
	c := dep.Spec.Template.Spec.Containers[0]
	for _, p := range svc.Spec.Ports {
		if !slices.ContainsFunc(c.Ports, func(cp corev1.ContainerPort) bool { return cp.Name == p.TargetPort.String() }) {
			t.Errorf("token.yaml: the Service's targetPort %s is no container port of %s", p.TargetPort.String(), c.Name)
		}
	}
	if len(c.Args) == 0 || c.Args[0] != "serve" {
		t.Errorf("token.yaml: args %v; want netcode-token serve ...", c.Args)
	}

	f := mustDecode(t, "fleet.yaml")[0].obj.(*fleet)
	if n := len(f.Spec.Template.Spec.Template.Spec.Containers); n != 1 {
		t.Errorf("fleet.yaml: %d containers; want the game server alone (Agones needs spec.container otherwise)", n)
	}
	for _, p := range f.Spec.Template.Spec.Ports {
		if p.ContainerPort != 40000 || p.Protocol != corev1.ProtocolUDP {
			t.Errorf("fleet.yaml: game port %s: %s %d; want UDP 40000, the image's NETCODE_BIND", p.Name, p.Protocol, p.ContainerPort)
		}
	}
}

// TestDecodeRefuses: the check fails on what the kubelet or the API
// server would refuse: a misspelled field (in the Kubernetes part and in
// the Agones part), an unknown kind, a user name or no user.
func TestDecodeRefuses(t *testing.T) {
	fleetYAML, err := os.ReadFile("fleet.yaml")
	if err != nil {
		t.Fatal(err)
	}
	tokenYAML, err := os.ReadFile("token.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, file, from, to, want string
	}{
		{"pod field", "fleet", "runAsUser:", "runAsUsr:", `unknown field "spec.template.spec.template.spec.securityContext.runAsUsr"`},
		{"agones field", "fleet", "portPolicy:", "portPolicie:", `unknown field "spec.template.spec.ports[0].portPolicie"`},
		{"deployment field", "token", "replicas:", "replica:", `unknown field "spec.replica"`},
		{"service field", "token", "targetPort:", "targetport:", `unknown field "spec.ports[0].targetport"`},
		{"kind", "token", "kind: Service", "kind: Servise", `kind "v1 Servise"`},
		{"user name", "token", "runAsUser: 65532", "runAsUser: nonroot", "runAsUser"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			data := map[string][]byte{"fleet": fleetYAML, "token": tokenYAML}[tc.file]
			if !bytes.Contains(data, []byte(tc.from)) {
				t.Fatalf("%s.yaml has no %q", tc.file, tc.from)
			}
			_, err := decode(bytes.Replace(data, []byte(tc.from), []byte(tc.to), 1))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("decode: %v; want an error with %q", err, tc.want)
			}
		})
	}
	objs, err := decode(bytes.Replace(tokenYAML, []byte("runAsUser: 65532"), []byte("runAsUser: 0"), 1))
	if err != nil {
		t.Fatal(err)
	}
	if errs := checkNonRoot(objs[0].pod); len(errs) == 0 {
		t.Error("runAsUser 0 passed the non-root check")
	}
	noUser := bytes.Replace(fleetYAML, []byte("runAsUser: 65532"), []byte(""), 1)
	if objs, err = decode(noUser); err != nil {
		t.Fatal(err)
	}
	if errs := checkNonRoot(objs[0].pod); len(errs) == 0 || !strings.Contains(errs[0], "runAsUser unset") {
		t.Errorf("no runAsUser: %v; want the error the kubelet would give", errs)
	}
}
