package k8s

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/fedmem/fedmem/profiles"
)

// decoded is one render, decoded strictly back into the typed objects.
type decoded struct {
	cm  *corev1.ConfigMap
	np  *networkingv1.NetworkPolicy
	pod *corev1.Pod
	st  *SandboxTemplate
}

func strictJSON(t *testing.T, b []byte, v any) {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		t.Fatalf("strict decode into %T: %v\n%s", v, err, b)
	}
}

func (d *decoded) add(t *testing.T, kind string, unmarshal func(any)) {
	switch kind {
	case "ConfigMap":
		d.cm = &corev1.ConfigMap{}
		unmarshal(d.cm)
	case "NetworkPolicy":
		d.np = &networkingv1.NetworkPolicy{}
		unmarshal(d.np)
	case "Pod":
		d.pod = &corev1.Pod{}
		unmarshal(d.pod)
	case SandboxTemplateKind:
		d.st = &SandboxTemplate{}
		unmarshal(d.st)
	default:
		t.Fatalf("unexpected kind %q in the output", kind)
	}
}

func decodeOutput(t *testing.T, out []byte, f Format) *decoded {
	t.Helper()
	d := &decoded{}
	switch f {
	case FormatYAML:
		for _, doc := range strings.Split(string(out), "\n---\n") {
			var tm metav1.TypeMeta
			if err := yaml.Unmarshal([]byte(doc), &tm); err != nil {
				t.Fatalf("yaml: %v", err)
			}
			d.add(t, tm.Kind, func(v any) {
				if err := yaml.UnmarshalStrict([]byte(doc), v); err != nil {
					t.Fatalf("strict YAML decode into %T: %v\n%s", v, err, doc)
				}
			})
		}
	case FormatJSON:
		var list struct {
			APIVersion string            `json:"apiVersion"`
			Kind       string            `json:"kind"`
			Items      []json.RawMessage `json:"items"`
		}
		strictJSON(t, out, &list)
		if list.APIVersion != "v1" || list.Kind != "List" {
			t.Fatalf("JSON output is %s/%s, want v1/List", list.APIVersion, list.Kind)
		}
		for _, it := range list.Items {
			var tm metav1.TypeMeta
			if err := json.Unmarshal(it, &tm); err != nil {
				t.Fatal(err)
			}
			d.add(t, tm.Kind, func(v any) { strictJSON(t, it, v) })
		}
	}
	return d
}

func loadAll(t *testing.T) map[string]*profiles.Profile {
	t.Helper()
	out := map[string]*profiles.Profile{}
	for _, n := range profiles.Builtins() {
		p, _, err := profiles.Load(n)
		if err != nil {
			t.Fatalf("load %s: %v", n, err)
		}
		out[n] = p
	}
	// Modes and fields no built-in uses.
	dir := t.TempDir()
	for name, body := range map[string]string{
		"hostnet": "name: hostnet\nextends: default\nnetwork: host\n",
		"visible": "name: visible\nextends: strict\nvault:\n  visible: [00-global, 30-clients/acme]\nlimits:\n  wall_time: 90s\n  memory: 1GiB\n  inbox_bytes: 4MiB\n",
	} {
		f := filepath.Join(dir, name+".yaml")
		if err := os.WriteFile(f, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		p, _, err := profiles.Load(f)
		if err != nil {
			t.Fatalf("load %s: %v", f, err)
		}
		out[name] = p
	}
	return out
}

// TestRenderEveryProfile renders every built-in profile (and two written
// for the modes they lack) as both kinds and both encodings, decodes the
// output strictly into the k8s types and checks every security field
// against the profile.
func TestRenderEveryProfile(t *testing.T) {
	seen := map[string]bool{}
	for name, p := range loadAll(t) {
		seen[p.Network] = true
		for _, kind := range []Kind{KindPod, KindAgentSandbox} {
			for _, f := range []Format{FormatYAML, FormatJSON} {
				t.Run(fmt.Sprintf("%s/%s/%s", name, kind, f), func(t *testing.T) {
					o := Options{Kind: kind, Image: "agent:1", GateImage: "fedmem:1", AgentUID: 2001, AgentGID: 2000, GateUID: 3001, GateGID: 3000,
						RuntimeClass: "gvisor", AppArmor: "localhost/fedmem-agent", Command: []string{"agent", "--headless"}}
					r, err := Render(p, "HASH", o)
					if err != nil {
						t.Fatal(err)
					}
					out, err := r.Encode(f)
					if err != nil {
						t.Fatal(err)
					}
					d := decodeOutput(t, out, f)
					checkAll(t, p, o, r, d)
				})
			}
		}
	}
	for _, m := range []string{profiles.NetworkNone, profiles.NetworkAllowlist, profiles.NetworkPublic, profiles.NetworkHost} {
		if !seen[m] {
			t.Errorf("no profile under test has network %s", m)
		}
	}
}

func checkAll(t *testing.T, p *profiles.Profile, o Options, r *Rendered, d *decoded) {
	t.Helper()
	// The seccomp profile travels with the manifests, complete.
	if d.cm == nil {
		t.Fatal("no seccomp ConfigMap")
	}
	js, ok := d.cm.Data[SeccompFile(p.Name)]
	if !ok {
		t.Fatalf("ConfigMap has no %s", SeccompFile(p.Name))
	}
	want, _ := SeccompProfile()
	if got := decodeSeccomp(t, []byte(js)); !reflect.DeepEqual(got, want.Profile) {
		t.Errorf("ConfigMap's seccomp profile differs from SeccompProfile()")
	}

	var spec corev1.PodSpec
	var podLabels map[string]string
	var egress []networkingv1.NetworkPolicyEgressRule
	switch o.Kind {
	case KindPod:
		if d.pod == nil || d.np == nil || d.st != nil {
			t.Fatalf("pod kind: want a Pod and a NetworkPolicy, got pod=%v np=%v template=%v", d.pod != nil, d.np != nil, d.st != nil)
		}
		spec, podLabels = d.pod.Spec, d.pod.Labels
		np := d.np.Spec
		sel, err := metav1.LabelSelectorAsSelector(&np.PodSelector)
		if err != nil || sel.Empty() {
			t.Fatalf("NetworkPolicy selector %v: %v (must select the pod, not everything)", np.PodSelector, err)
		}
		if !sel.Matches(labelSet(podLabels)) {
			t.Errorf("NetworkPolicy selector %v does not select the pod (labels %v)", np.PodSelector, podLabels)
		}
		if !reflect.DeepEqual(np.PolicyTypes, []networkingv1.PolicyType{networkingv1.PolicyTypeIngress, networkingv1.PolicyTypeEgress}) {
			t.Errorf("policyTypes %v: want Ingress and Egress", np.PolicyTypes)
		}
		if len(np.Ingress) != 0 {
			t.Errorf("ingress rules %v: nothing may reach the pod", np.Ingress)
		}
		egress = np.Egress
	case KindAgentSandbox:
		if d.st == nil || d.pod != nil || d.np != nil {
			t.Fatalf("agent-sandbox kind: want one SandboxTemplate only")
		}
		if d.st.APIVersion != SandboxTemplateAPIVersion {
			t.Errorf("apiVersion %q", d.st.APIVersion)
		}
		s := d.st.Spec
		spec, podLabels = s.PodTemplate.Spec, s.PodTemplate.ObjectMeta.Labels
		if s.NetworkPolicy == nil || s.NetworkPolicyManagement != "Managed" {
			t.Fatalf("networkPolicy %v management %q: the controller must apply fedmem's rules", s.NetworkPolicy, s.NetworkPolicyManagement)
		}
		if len(s.NetworkPolicy.Ingress) != 0 {
			t.Errorf("ingress rules %v", s.NetworkPolicy.Ingress)
		}
		if s.EnvVarsInjectionPolicy != "Disallowed" || s.VolumeClaimTemplatesPolicy != "Disallowed" {
			t.Errorf("claims may change the agent: env %q volumes %q", s.EnvVarsInjectionPolicy, s.VolumeClaimTemplatesPolicy)
		}
		egress = s.NetworkPolicy.Egress
	}
	if podLabels[LabelProfile] != p.Name {
		t.Errorf("pod label %s = %q", LabelProfile, podLabels[LabelProfile])
	}
	checkEgress(t, p, o, r, egress)
	checkPodSpec(t, p, o, spec)
}

func labelSet(m map[string]string) labelsMap { return labelsMap(m) }

type labelsMap map[string]string

func (l labelsMap) Has(k string) bool   { _, ok := l[k]; return ok }
func (l labelsMap) Get(k string) string { return l[k] }
func (l labelsMap) Lookup(k string) (string, bool) {
	v, ok := l[k]
	return v, ok
}

func checkEgress(t *testing.T, p *profiles.Profile, o Options, r *Rendered, egress []networkingv1.NetworkPolicyEgressRule) {
	t.Helper()
	switch p.Network {
	case profiles.NetworkNone:
		if len(egress) != 0 {
			t.Errorf("network none: egress %v, want none at all", egress)
		}
	case profiles.NetworkHost:
		if !hasWarning(r, "network: host") {
			t.Errorf("network host rendered without a warning: %q", r.Warnings)
		}
	default: // allowlist, public: only the proxy (and cluster DNS to find it)
		if len(egress) == 0 {
			t.Fatalf("network %s: no egress at all; the proxy must be reachable", p.Network)
		}
		for _, e := range egress {
			if len(e.To) == 0 || len(e.Ports) == 0 {
				t.Errorf("egress rule %v opens every destination or port", e)
			}
			for _, peer := range e.To {
				if peer.IPBlock != nil || peer.PodSelector == nil || len(peer.PodSelector.MatchLabels) == 0 {
					t.Errorf("egress peer %v is not a selected set of pods", peer)
					continue
				}
				proxy := reflect.DeepEqual(peer.PodSelector.MatchLabels, DefaultProxySelector())
				dns := peer.PodSelector.MatchLabels["k8s-app"] == "kube-dns"
				if !proxy && !dns {
					t.Errorf("egress peer %v is neither the proxy nor cluster DNS", peer)
				}
				for _, port := range e.Ports {
					if proxy && port.Port.IntValue() != 3128 || dns && port.Port.IntValue() != 53 {
						t.Errorf("egress to %v on port %v", peer.PodSelector.MatchLabels, port.Port)
					}
				}
			}
		}
	}
}

func hasWarning(r *Rendered, sub string) bool {
	for _, w := range r.Warnings {
		if strings.Contains(w, sub) {
			return true
		}
	}
	return false
}

func checkHardened(t *testing.T, c corev1.Container, uid, gid int64) {
	t.Helper()
	sc := c.SecurityContext
	if sc == nil {
		t.Fatalf("container %s has no securityContext", c.Name)
	}
	switch {
	case sc.RunAsUser == nil || *sc.RunAsUser != uid, sc.RunAsGroup == nil || *sc.RunAsGroup != gid:
		t.Errorf("container %s runs as %v:%v, want %d:%d", c.Name, deref(sc.RunAsUser), deref(sc.RunAsGroup), uid, gid)
	}
	if sc.RunAsNonRoot == nil || !*sc.RunAsNonRoot {
		t.Errorf("container %s: runAsNonRoot not true", c.Name)
	}
	if sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem {
		t.Errorf("container %s: readOnlyRootFilesystem not true", c.Name)
	}
	if sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation {
		t.Errorf("container %s: allowPrivilegeEscalation not false", c.Name)
	}
	if sc.Privileged != nil && *sc.Privileged {
		t.Errorf("container %s is privileged", c.Name)
	}
	if sc.Capabilities == nil || !reflect.DeepEqual(sc.Capabilities.Drop, []corev1.Capability{"ALL"}) || len(sc.Capabilities.Add) != 0 {
		t.Errorf("container %s: capabilities %v, want drop ALL, add none", c.Name, sc.Capabilities)
	}
	if sc.ProcMount != nil && *sc.ProcMount != corev1.DefaultProcMount {
		t.Errorf("container %s: procMount %v", c.Name, *sc.ProcMount)
	}
	if sc.SeccompProfile == nil || sc.SeccompProfile.Type == corev1.SeccompProfileTypeUnconfined {
		t.Errorf("container %s: no seccomp profile", c.Name)
	}
}

func deref[T any](p *T) any {
	if p == nil {
		return nil
	}
	return *p
}

func checkPodSpec(t *testing.T, p *profiles.Profile, o Options, s corev1.PodSpec) {
	t.Helper()
	if s.AutomountServiceAccountToken == nil || *s.AutomountServiceAccountToken {
		t.Error("automountServiceAccountToken is not false")
	}
	if s.EnableServiceLinks == nil || *s.EnableServiceLinks {
		t.Error("enableServiceLinks is not false")
	}
	if s.HostPID || s.HostIPC || s.HostNetwork {
		t.Errorf("host namespaces: pid %v ipc %v network %v", s.HostPID, s.HostIPC, s.HostNetwork)
	}
	if s.ShareProcessNamespace != nil && *s.ShareProcessNamespace {
		t.Error("shareProcessNamespace: the agent would see the gate's processes")
	}
	if s.HostUsers != nil && *s.HostUsers {
		t.Error("hostUsers true")
	}
	psc := s.SecurityContext
	if psc == nil || psc.RunAsNonRoot == nil || !*psc.RunAsNonRoot {
		t.Fatal("pod securityContext: runAsNonRoot not true")
	}
	if psc.FSGroup != nil {
		t.Errorf("fsGroup %d: it would hand every container, the agent too, a group over the vault", *psc.FSGroup)
	}
	if !reflect.DeepEqual(psc.SupplementalGroups, []int64{o.AgentGID}) {
		t.Errorf("supplementalGroups %v, want only the agents' group %d", psc.SupplementalGroups, o.AgentGID)
	}
	if psc.SupplementalGroupsPolicy == nil || *psc.SupplementalGroupsPolicy != corev1.SupplementalGroupsPolicyStrict {
		t.Error("supplementalGroupsPolicy is not Strict")
	}
	if len(psc.Sysctls) != 0 {
		t.Errorf("sysctls %v", psc.Sysctls)
	}
	if s.RuntimeClassName == nil || *s.RuntimeClassName != o.RuntimeClass {
		t.Errorf("runtimeClassName %v, want %q", deref(s.RuntimeClassName), o.RuntimeClass)
	}
	if s.RestartPolicy != corev1.RestartPolicyNever {
		t.Errorf("restartPolicy %s", s.RestartPolicy)
	}
	if p.Limits.WallTime > 0 {
		if s.ActiveDeadlineSeconds == nil || time.Duration(*s.ActiveDeadlineSeconds)*time.Second < time.Duration(p.Limits.WallTime) ||
			time.Duration(*s.ActiveDeadlineSeconds-1)*time.Second >= time.Duration(p.Limits.WallTime) {
			t.Errorf("activeDeadlineSeconds %v for wall_time %v", deref(s.ActiveDeadlineSeconds), time.Duration(p.Limits.WallTime))
		}
	} else if s.ActiveDeadlineSeconds != nil {
		t.Errorf("activeDeadlineSeconds %d without a wall_time", *s.ActiveDeadlineSeconds)
	}
	vols := map[string]corev1.Volume{}
	for _, v := range s.Volumes {
		vols[v.Name] = v
		if v.HostPath != nil {
			t.Errorf("volume %s is a hostPath", v.Name)
		}
	}
	if c := vols[VolData].PersistentVolumeClaim; c == nil || c.ClaimName != DefaultVaultClaim {
		t.Errorf("data volume %v", vols[VolData])
	}
	if e := vols[VolTmp].EmptyDir; e == nil || e.SizeLimit == nil || e.SizeLimit.Value() != int64(p.Limits.TmpBytes) {
		t.Errorf("tmp volume %v, want a size limit of %d", vols[VolTmp], p.Limits.TmpBytes)
	}

	// Containers: one agent; init: session-inbox, then the gate sidecar.
	if len(s.Containers) != 1 || s.Containers[0].Name != ContainerAgent {
		t.Fatalf("containers %d: want the agent alone", len(s.Containers))
	}
	if len(s.InitContainers) != 2 || s.InitContainers[0].Name != ContainerInbox || s.InitContainers[1].Name != ContainerGate {
		t.Fatalf("init containers: want %s then %s", ContainerInbox, ContainerGate)
	}
	agent, prep, gate := s.Containers[0], s.InitContainers[0], s.InitContainers[1]
	checkHardened(t, agent, o.AgentUID, o.AgentGID)
	checkHardened(t, prep, o.AgentUID, o.AgentGID)
	checkHardened(t, gate, o.GateUID, o.GateGID)

	// Agent: the seccomp profile generated for this profile, AppArmor.
	if sp := agent.SecurityContext.SeccompProfile; sp.Type != corev1.SeccompProfileTypeLocalhost || sp.LocalhostProfile == nil || *sp.LocalhostProfile != SeccompLocalhostRef(p.Name) {
		t.Errorf("agent seccomp %v, want Localhost %s", sp, SeccompLocalhostRef(p.Name))
	}
	if ap := agent.SecurityContext.AppArmorProfile; ap == nil || ap.Type != corev1.AppArmorProfileTypeLocalhost || ap.LocalhostProfile == nil || *ap.LocalhostProfile != "fedmem-agent" {
		t.Errorf("agent AppArmor %v", ap)
	}
	if agent.Image != o.Image || !reflect.DeepEqual(agent.Command, o.Command) {
		t.Errorf("agent image %q command %v", agent.Image, agent.Command)
	}
	if agent.Stdin || agent.TTY && p.TTY == "never" {
		t.Errorf("agent stdin %v tty %v", agent.Stdin, agent.TTY)
	}
	if p.Limits.Memory > 0 {
		if m := agent.Resources.Limits[corev1.ResourceMemory]; m.Value() != int64(p.Limits.Memory) {
			t.Errorf("memory limit %v, want %d", m.String(), p.Limits.Memory)
		}
	}
	env := map[string]corev1.EnvVar{}
	for _, e := range agent.Env {
		env[e.Name] = e
	}
	if e := env[sessionEnv]; e.ValueFrom == nil || e.ValueFrom.FieldRef == nil || e.ValueFrom.FieldRef.FieldPath != "metadata.uid" {
		t.Errorf("%s is not the pod's uid: %v", sessionEnv, e)
	}
	for k, v := range p.Env.Set {
		if env[k].Value != strings.ReplaceAll(v, "${HOME}", HomeDir) {
			t.Errorf("env %s = %q, profile sets %q", k, env[k].Value, v)
		}
	}
	if _, ok := env["HTTPS_PROXY"]; ok != profiles.Proxied(p.Network) {
		t.Errorf("HTTPS_PROXY set %v for network %s", ok, p.Network)
	}

	// Agent mounts: only the session's inbox, /tmp and the profile's home
	// paths are writable; the vault is read-only; no review socket.
	homeRW := map[string]bool{}
	for _, w := range p.Home.Writable {
		homeRW[filepath.Join(HomeDir, filepath.Clean(w))] = true
	}
	inboxMounts, maskMounts := 0, 0
	for _, m := range agent.VolumeMounts {
		if m.Name == VolReview {
			t.Errorf("agent mounts the review socket volume at %s", m.MountPath)
		}
		if m.MountPropagation != nil && *m.MountPropagation != corev1.MountPropagationNone {
			t.Errorf("agent mount %s propagates", m.MountPath)
		}
		switch {
		case m.Name == VolData && !m.ReadOnly:
			inboxMounts++
			if m.MountPath != InboxDir || m.SubPathExpr != "vault/90-inbox/$("+sessionEnv+")" || m.SubPath != "" {
				t.Errorf("writable vault mount %+v is not exactly the session's inbox", m)
			}
			if env["FEDMEM_INBOX"].Value != m.MountPath {
				t.Errorf("FEDMEM_INBOX %q, inbox mounted at %q", env["FEDMEM_INBOX"].Value, m.MountPath)
			}
		case m.Name == VolData:
			if m.SubPath == "" || (m.SubPath != "vault" && !strings.HasPrefix(m.SubPath, "vault/")) || strings.HasPrefix(m.SubPath, "vault/90-inbox") {
				t.Errorf("agent vault mount %+v: not a read-only part of vault/ outside 90-inbox (the gate's state is next to it)", m)
			}
			if len(p.Vault.Visible) == 0 && (m.SubPath != "vault" || m.MountPath != VaultDir) {
				t.Errorf("whole-vault profile, mount %+v", m)
			}
		case m.Name == VolInboxMask:
			maskMounts++
			if !m.ReadOnly || m.MountPath != filepath.Join(VaultDir, "90-inbox") {
				t.Errorf("inbox mask %+v must cover 90-inbox read-only", m)
			}
		case m.Name == VolTmp:
			if m.MountPath != TmpDir {
				t.Errorf("tmp at %s", m.MountPath)
			}
		case m.Name == VolHome && m.ReadOnly:
			if m.MountPath != HomeDir {
				t.Errorf("home at %s", m.MountPath)
			}
		case m.Name == VolHome:
			if !homeRW[m.MountPath] {
				t.Errorf("writable home mount %s is not in the profile's home.writable %v", m.MountPath, p.Home.Writable)
			}
			delete(homeRW, m.MountPath)
		default:
			t.Errorf("unexpected agent mount %+v", m)
		}
	}
	if inboxMounts != 1 {
		t.Errorf("%d writable inbox mounts, want 1", inboxMounts)
	}
	if wantMask := len(p.Vault.Visible) == 0; (maskMounts == 1) != wantMask {
		t.Errorf("%d inbox masks for visible=%v", maskMounts, p.Vault.Visible)
	}
	if len(homeRW) != 0 {
		t.Errorf("home.writable paths not mounted: %v", homeRW)
	}

	// Gate: native sidecar, vault and state writable, review socket.
	if gate.RestartPolicy == nil || *gate.RestartPolicy != corev1.ContainerRestartPolicyAlways {
		t.Error("gate is not a native sidecar (restartPolicy Always)")
	}
	if gate.Image != o.GateImage || strings.Join(gate.Command[:3], " ") != "fedmem gate run" || !strings.Contains(strings.Join(gate.Command, " "), "--vault "+VaultDir) {
		t.Errorf("gate %q %v", gate.Image, gate.Command)
	}
	var gateData, gateReview bool
	for _, m := range gate.VolumeMounts {
		gateData = gateData || (m.Name == VolData && !m.ReadOnly && m.MountPath == DataDir && m.SubPath == "")
		gateReview = gateReview || (m.Name == VolReview && m.MountPath == ReviewDir)
	}
	if !gateData || !gateReview {
		t.Errorf("gate mounts %v: want the data volume writable at %s and the review socket at %s", gate.VolumeMounts, DataDir, ReviewDir)
	}
	if e := vols[VolReview].EmptyDir; e == nil {
		t.Error("review socket volume is not an emptyDir")
	}
	// The init step sees 90-inbox only.
	if len(prep.VolumeMounts) != 1 || prep.VolumeMounts[0].SubPath != "vault/90-inbox" {
		t.Errorf("session-inbox mounts %v", prep.VolumeMounts)
	}
}

// TestRenderRefusesLoosening: options that would loosen the pod, or that
// are malformed, are errors naming the flag.
func TestRenderRefusesLoosening(t *testing.T) {
	p, hash, err := profiles.Load("default")
	if err != nil {
		t.Fatal(err)
	}
	base := Options{Image: "a", GateImage: "g", AgentUID: 7, AgentGID: 7, GateUID: 8, GateGID: 8}
	for _, tc := range []struct {
		name string
		mod  func(*Options)
		want string
	}{
		{"root agent", func(o *Options) { o.AgentUID = 0 }, "--agent-uid"},
		{"root group", func(o *Options) { o.GateGID = 0 }, "--gate-gid"},
		{"negative uid", func(o *Options) { o.GateUID = -1 }, "--gate-uid"},
		{"same uid", func(o *Options) { o.GateUID = 7 }, "own user"},
		{"same gid", func(o *Options) { o.AgentGID, o.GateGID = 5, 5 }, "gate's group"},
		{"apparmor unconfined", func(o *Options) { o.AppArmor = "unconfined" }, "loosen"},
		{"bad kind", func(o *Options) { o.Kind = "deployment" }, "--kind"},
		{"bad runtime class", func(o *Options) { o.RuntimeClass = "Not_A_Name" }, "--runtime-class"},
		{"no image", func(o *Options) { o.Image = "" }, "--image"},
		{"bad proxy", func(o *Options) { o.ProxyURL = "socks5://x:1" }, "--proxy-url"},
	} {
		o := base
		tc.mod(&o)
		_, err := Render(p, hash, o)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err %v, want one naming %q", tc.name, err, tc.want)
		}
	}
}

// TestRenderWarnsWhatKubernetesCannotSay: limits without a pod field are
// named, not dropped.
func TestRenderWarnsWhatKubernetesCannotSay(t *testing.T) {
	p, _, err := profiles.Load("ci")
	if err != nil {
		t.Fatal(err)
	}
	r, err := Render(p, "", Options{Image: "a", GateImage: "g", AgentUID: 7, AgentGID: 7, GateUID: 8, GateGID: 8})
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{"limits.pids", "limits.file_size", "limits.open_files", "env.pass", "allowlist", "seccomp: "} {
		if !hasWarning(r, w) {
			t.Errorf("no warning about %s in %q", w, r.Warnings)
		}
	}
}
