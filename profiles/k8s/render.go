package k8s

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/url"
	"path"
	"sort"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/yaml"

	"github.com/fedmem/fedmem/profiles"
	"github.com/fedmem/fedmem/vault"
)

// Kind is what Render produces around the pod.
type Kind string

// Kinds.
const (
	// KindPod: a Pod and a NetworkPolicy selecting it.
	KindPod Kind = "pod"
	// KindAgentSandbox: a kubernetes-sigs/agent-sandbox SandboxTemplate
	// whose managed network policy carries the same rules.
	KindAgentSandbox Kind = "agent-sandbox"
)

// Paths inside the pod. The data volume holds the vault and the gate's
// state side by side in one mount, because the gate moves drafts from the
// inbox into its state directory by rename(2), which fails with EXDEV
// across two mounts even of one file system.
const (
	DataDir   = "/srv/fedmem"
	VaultDir  = DataDir + "/vault"
	StateDir  = DataDir + "/state"
	InboxDir  = DataDir + "/inbox" // the agent's $FEDMEM_INBOX
	ReviewDir = "/run/fedmem/review"
	HomeDir   = "/home/agent"
	TmpDir    = "/tmp"

	dataVaultSub = "vault"
	// sessionEnv carries the session id: the pod's uid (downward API), so
	// every pod made from one template has its own inbox directory.
	sessionEnv = "FEDMEM_SESSION"
)

// Volume and container names.
const (
	VolData      = "fedmem-data"
	VolInboxMask = "inbox-mask"
	VolReview    = "review-socket"
	VolHome      = "home"
	VolTmp       = "tmp"

	ContainerAgent = "agent"
	ContainerGate  = "gate"
	ContainerInbox = "session-inbox"
)

// Labels and annotations fedmem sets.
const (
	LabelName        = "app.kubernetes.io/name"
	LabelManagedBy   = "app.kubernetes.io/managed-by"
	LabelProfile     = "fedmem.dev/profile"
	LabelPod         = "fedmem.dev/pod"
	AnnotProfileHash = "fedmem.dev/profile-hash"
	AnnotAllow       = "fedmem.dev/allow"
)

// Options are the renderer's inputs besides the profile. Every option may
// only tighten what the profile says.
type Options struct {
	Kind      Kind
	Name      string // object name; default "fedmem-<profile>"
	Namespace string // optional
	// Image runs the agent; GateImage holds the fedmem binary (gate and
	// the session-inbox init step).
	Image, GateImage string
	// Command and Args of the agent; empty: the image's own.
	Command, Args []string
	// AgentUID, AgentGID, GateUID, GateGID: required, never 0 (the
	// command's flags default to DefaultAgentUID and DefaultGateUID).
	AgentUID, AgentGID int64
	GateUID, GateGID   int64
	// RuntimeClass names a RuntimeClass (gvisor, kata, …); empty: none.
	RuntimeClass string
	// AppArmor is "runtime/default", "localhost/NAME" or NAME; empty: none.
	AppArmor string
	// VaultClaim is the PersistentVolumeClaim holding vault/ and state/.
	VaultClaim string
	// ProxyURL is what the agent's HTTP(S)_PROXY points at in allowlist
	// and public modes; ProxySelector selects the proxy's pods for the
	// NetworkPolicy, in ProxyNamespace (empty: the pod's own namespace).
	ProxyURL       string
	ProxySelector  map[string]string
	ProxyNamespace string
}

// Defaults for Options.
const (
	DefaultAgentUID   = 10001
	DefaultGateUID    = 10002
	DefaultVaultClaim = "fedmem-vault"
	DefaultProxyURL   = "http://fedmem-proxy:3128"
)

// DefaultProxySelector selects the egress proxy's pods.
func DefaultProxySelector() map[string]string {
	return map[string]string{LabelName: "fedmem-proxy"}
}

// Rendered is the output of Render.
type Rendered struct {
	// Objects in apply order: the seccomp ConfigMap, then the
	// NetworkPolicy and the Pod (KindPod) or the SandboxTemplate.
	Objects  []any
	Seccomp  *SeccompResult
	Warnings []string
}

// ErrOptions is wrapped by every error about bad Options.
var ErrOptions = errors.New("k8s render")

func optErr(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrOptions}, args...)...)
}

// Render builds the manifests for profile p (resolved and validated, with
// its hash from profiles.Load).
func Render(p *profiles.Profile, hash string, o Options) (*Rendered, error) {
	if err := o.complete(p); err != nil {
		return nil, err
	}
	sc, err := SeccompProfile(p.SocketFamilyNumbers()...)
	if err != nil {
		return nil, err
	}
	r := &Rendered{Seccomp: sc}
	for _, n := range sc.Notes {
		r.Warnings = append(r.Warnings, "seccomp: "+n)
	}
	secJSON, err := sc.JSON()
	if err != nil {
		return nil, err
	}
	labels := map[string]string{
		LabelName:      "fedmem-agent",
		LabelManagedBy: "fedmem",
		LabelProfile:   p.Name,
		LabelPod:       o.Name,
	}
	annots := map[string]string{AnnotProfileHash: hash}
	if p.Network == profiles.NetworkAllowlist {
		allow, err := p.AllowList()
		if err != nil {
			return nil, err
		}
		annots[AnnotAllow] = strings.Join(allow, ",")
	}
	cm := &corev1.ConfigMap{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: metav1.ObjectMeta{Name: "fedmem-seccomp-" + p.Name, Namespace: o.Namespace, Labels: map[string]string{LabelManagedBy: "fedmem", LabelProfile: p.Name}},
		Data:       map[string]string{SeccompFile(p.Name): string(secJSON)},
	}
	r.Objects = append(r.Objects, cm)

	spec, warns := podSpec(p, o)
	r.Warnings = append(r.Warnings, warns...)
	egress, ewarns, err := egressRules(p, o)
	if err != nil {
		return nil, err
	}
	r.Warnings = append(r.Warnings, ewarns...)

	switch o.Kind {
	case KindPod:
		np := &networkingv1.NetworkPolicy{
			TypeMeta:   metav1.TypeMeta{APIVersion: "networking.k8s.io/v1", Kind: "NetworkPolicy"},
			ObjectMeta: metav1.ObjectMeta{Name: o.Name, Namespace: o.Namespace, Labels: copyMap(labels)},
			Spec: networkingv1.NetworkPolicySpec{
				PodSelector: metav1.LabelSelector{MatchLabels: map[string]string{LabelPod: o.Name}},
				// Both types listed with no ingress rule: nothing reaches
				// the pod; egress only as the profile's mode allows.
				PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeIngress, networkingv1.PolicyTypeEgress},
				Egress:      egress,
			},
		}
		pod := &corev1.Pod{
			TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
			ObjectMeta: metav1.ObjectMeta{Name: o.Name, Namespace: o.Namespace, Labels: labels, Annotations: annots},
			Spec:       spec,
		}
		r.Objects = append(r.Objects, np, pod)
	case KindAgentSandbox:
		r.Warnings = append(r.Warnings, fmt.Sprintf(
			"agent-sandbox: every sandbox of this template mounts the claim %q and runs its own gate; a gate refuses a vault another gate holds, so run one sandbox of it at a time (no warm pool above 1) until vaults sync through a Git remote", o.VaultClaim))
		st := &SandboxTemplate{
			TypeMeta:   metav1.TypeMeta{APIVersion: SandboxTemplateAPIVersion, Kind: SandboxTemplateKind},
			ObjectMeta: metav1.ObjectMeta{Name: o.Name, Namespace: o.Namespace, Labels: copyMap(labels), Annotations: copyMap(annots)},
			Spec: SandboxTemplateSpec{
				PodTemplate: SandboxPodTemplate{
					Spec:       spec,
					ObjectMeta: SandboxPodMetadata{Labels: labels, Annotations: annots},
				},
				NetworkPolicy:              &SandboxNetworkPolicy{Egress: egress},
				NetworkPolicyManagement:    "Managed",
				EnvVarsInjectionPolicy:     "Disallowed",
				VolumeClaimTemplatesPolicy: "Disallowed",
			},
		}
		r.Objects = append(r.Objects, st)
	}
	return r, nil
}

func (o *Options) complete(p *profiles.Profile) error {
	if p == nil {
		return optErr("no profile")
	}
	if o.Kind == "" {
		o.Kind = KindPod
	}
	if o.Kind != KindPod && o.Kind != KindAgentSandbox {
		return optErr("--kind %q is not pod or agent-sandbox", o.Kind)
	}
	if errs := validation.IsValidLabelValue(p.Name); len(errs) > 0 || p.Name == "" {
		return optErr("profile name %q cannot label Kubernetes objects: %s", p.Name, strings.Join(errs, "; "))
	}
	if o.Name == "" {
		o.Name = "fedmem-" + p.Name
	}
	if errs := validation.IsDNS1123Label(o.Name); len(errs) > 0 {
		return optErr("--name %q: %s", o.Name, strings.Join(errs, "; "))
	}
	if o.Namespace != "" {
		if errs := validation.IsDNS1123Label(o.Namespace); len(errs) > 0 {
			return optErr("--namespace %q: %s", o.Namespace, strings.Join(errs, "; "))
		}
	}
	if o.Image == "" {
		return optErr("--image (the agent's image) is required")
	}
	if o.GateImage == "" {
		return optErr("--gate-image (an image holding the fedmem binary) is required")
	}
	// No default here: 0 is root, and an id left out must not become one.
	for _, id := range []struct {
		name string
		v    int64
	}{{"--agent-uid", o.AgentUID}, {"--agent-gid", o.AgentGID}, {"--gate-uid", o.GateUID}, {"--gate-gid", o.GateGID}} {
		if id.v < 1 || id.v > 1<<31-1 {
			return optErr("%s %d: must be an unprivileged id (1..2147483647; never 0)", id.name, id.v)
		}
	}
	if o.AgentUID == o.GateUID {
		return optErr("--agent-uid and --gate-uid are both %d: the gate must run as its own user", o.AgentUID)
	}
	if o.AgentGID == o.GateGID {
		return optErr("--agent-gid and --gate-gid are both %d: the agent must not hold the gate's group", o.AgentGID)
	}
	if o.RuntimeClass != "" {
		if errs := validation.IsDNS1123Subdomain(o.RuntimeClass); len(errs) > 0 {
			return optErr("--runtime-class %q: %s", o.RuntimeClass, strings.Join(errs, "; "))
		}
	}
	if o.AppArmor != "" {
		if _, err := appArmor(o.AppArmor); err != nil {
			return err
		}
	}
	if o.VaultClaim == "" {
		o.VaultClaim = DefaultVaultClaim
	}
	if errs := validation.IsDNS1123Subdomain(o.VaultClaim); len(errs) > 0 {
		return optErr("--vault-claim %q: %s", o.VaultClaim, strings.Join(errs, "; "))
	}
	if o.ProxyURL == "" {
		o.ProxyURL = DefaultProxyURL
	}
	if len(o.ProxySelector) == 0 {
		o.ProxySelector = DefaultProxySelector()
	}
	for k, v := range o.ProxySelector {
		if errs := append(validation.IsQualifiedName(k), validation.IsValidLabelValue(v)...); len(errs) > 0 {
			return optErr("--proxy-selector %s=%s: %s", k, v, strings.Join(errs, "; "))
		}
	}
	if o.ProxyNamespace != "" {
		if errs := validation.IsDNS1123Label(o.ProxyNamespace); len(errs) > 0 {
			return optErr("--proxy-namespace %q: %s", o.ProxyNamespace, strings.Join(errs, "; "))
		}
	}
	return nil
}

// appArmor turns the --apparmor value into a profile. "unconfined" is
// refused: options may only tighten.
func appArmor(v string) (*corev1.AppArmorProfile, error) {
	switch {
	case v == "runtime/default":
		return &corev1.AppArmorProfile{Type: corev1.AppArmorProfileTypeRuntimeDefault}, nil
	case v == "unconfined" || v == "Unconfined":
		return nil, optErr("--apparmor unconfined would loosen the pod; give runtime/default or a profile loaded on the nodes")
	}
	name := strings.TrimPrefix(v, "localhost/")
	if name == "" || strings.ContainsAny(name, " \t\n/") {
		return nil, optErr("--apparmor %q is not runtime/default, localhost/NAME or NAME", v)
	}
	return &corev1.AppArmorProfile{Type: corev1.AppArmorProfileTypeLocalhost, LocalhostProfile: ptr(name)}, nil
}

// hardened is the container security context every fedmem container gets:
// its own non-root ids, nothing to gain (no capability, no setuid
// escalation), a read-only image.
func hardened(uid, gid int64, sec *corev1.SeccompProfile) *corev1.SecurityContext {
	return &corev1.SecurityContext{
		RunAsUser:                &uid,
		RunAsGroup:               &gid,
		RunAsNonRoot:             ptr(true),
		ReadOnlyRootFilesystem:   ptr(true),
		AllowPrivilegeEscalation: ptr(false),
		Privileged:               ptr(false),
		Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
		SeccompProfile:           sec,
		ProcMount:                ptr(corev1.DefaultProcMount),
	}
}

func podSpec(p *profiles.Profile, o Options) (corev1.PodSpec, []string) {
	localhost := &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeLocalhost, LocalhostProfile: ptr(SeccompLocalhostRef(p.Name))}
	sessionVar := corev1.EnvVar{Name: sessionEnv, ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.uid"}}}
	inboxSub := path.Join(dataVaultSub, vault.InboxDir)

	// The agent.
	agentSC := hardened(o.AgentUID, o.AgentGID, localhost)
	if o.AppArmor != "" {
		agentSC.AppArmorProfile, _ = appArmor(o.AppArmor)
	}
	mounts, warns := agentMounts(p, inboxSub)
	env, envWarns := agentEnv(p, o, sessionVar)
	warns = append(warns, envWarns...)
	agent := corev1.Container{
		Name:            ContainerAgent,
		Image:           o.Image,
		Command:         o.Command,
		Args:            o.Args,
		Env:             env,
		VolumeMounts:    mounts,
		SecurityContext: agentSC,
		WorkingDir:      HomeDir,
	}
	if p.Limits.Memory > 0 {
		agent.Resources.Limits = corev1.ResourceList{corev1.ResourceMemory: *resource.NewQuantity(int64(p.Limits.Memory), resource.BinarySI)}
	}
	warns = append(warns, unrendered(p, o)...)

	gate := gateSidecar(o)
	prep := inboxPrep(o, sessionVar, inboxSub, localhost)

	tmpLimit := resource.NewQuantity(int64(p.Limits.TmpBytes), resource.BinarySI)
	spec := corev1.PodSpec{
		RestartPolicy:                corev1.RestartPolicyNever,
		AutomountServiceAccountToken: ptr(false),
		EnableServiceLinks:           ptr(false),
		HostNetwork:                  false,
		HostPID:                      false,
		HostIPC:                      false,
		HostUsers:                    nil,
		// The gate's processes stay out of the agent's view (guarantee 5).
		ShareProcessNamespace: ptr(false),
		SecurityContext: &corev1.PodSecurityContext{
			RunAsNonRoot: ptr(true),
			// The agents' group, which owns the session directories: the
			// gate needs it to move drafts out; the agent has it anyway.
			// Strict: no group from the image's /etc/group is added.
			SupplementalGroups:       []int64{o.AgentGID},
			SupplementalGroupsPolicy: ptr(corev1.SupplementalGroupsPolicyStrict),
			SeccompProfile:           &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
		},
		InitContainers: []corev1.Container{prep, gate},
		Containers:     []corev1.Container{agent},
		Volumes: []corev1.Volume{
			{Name: VolData, VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: o.VaultClaim}}},
			{Name: VolInboxMask, VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{SizeLimit: resource.NewQuantity(1<<20, resource.BinarySI)}}},
			{Name: VolReview, VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{Medium: corev1.StorageMediumMemory, SizeLimit: resource.NewQuantity(1<<20, resource.BinarySI)}}},
			{Name: VolHome, VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
			{Name: VolTmp, VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{Medium: corev1.StorageMediumMemory, SizeLimit: tmpLimit}}},
		},
	}
	if p.Limits.WallTime > 0 {
		s := int64((time.Duration(p.Limits.WallTime) + time.Second - 1) / time.Second)
		spec.ActiveDeadlineSeconds = &s
	}
	if o.RuntimeClass != "" {
		spec.RuntimeClassName = ptr(o.RuntimeClass)
	}
	return spec, warns
}

// agentMounts are the agent container's mounts: the vault read-only (or
// its visible parts), the session's own inbox, home read-only with its
// writable sub-directories, and /tmp. The warnings name home.writable
// entries rendered as directories.
func agentMounts(p *profiles.Profile, inboxSub string) ([]corev1.VolumeMount, []string) {
	var warns []string
	mounts := []corev1.VolumeMount{}
	if len(p.Vault.Visible) == 0 {
		mounts = append(mounts,
			corev1.VolumeMount{Name: VolData, MountPath: VaultDir, SubPath: dataVaultSub, ReadOnly: true},
			// Over the vault's 90-inbox: an empty read-only directory, so
			// that other sessions' drafts and the session records stay
			// invisible, as in a local sandbox.
			corev1.VolumeMount{Name: VolInboxMask, MountPath: path.Join(VaultDir, vault.InboxDir), ReadOnly: true},
		)
	} else {
		vis := append([]string(nil), p.Vault.Visible...)
		sort.Strings(vis)
		for _, v := range vis {
			c := path.Clean(v)
			mounts = append(mounts, corev1.VolumeMount{Name: VolData, MountPath: path.Join(VaultDir, c), SubPath: path.Join(dataVaultSub, c), ReadOnly: true})
		}
	}
	mounts = append(mounts,
		// The session's own inbox: 90-inbox/<pod uid> of the vault, made by
		// the session-inbox init container; nothing else of 90-inbox.
		corev1.VolumeMount{Name: VolData, MountPath: InboxDir, SubPathExpr: inboxSub + "/$(" + sessionEnv + ")"},
		corev1.VolumeMount{Name: VolHome, MountPath: HomeDir, ReadOnly: true},
		corev1.VolumeMount{Name: VolTmp, MountPath: TmpDir},
	)
	hw := append([]string(nil), p.Home.Writable...)
	sort.Strings(hw)
	for _, w := range hw {
		c := path.Clean(w)
		if !strings.HasSuffix(w, "/") {
			warns = append(warns, fmt.Sprintf("home.writable %q: rendered as a writable directory ~/%s (a pod's home is an empty volume; no single file can be opened in it)", w, c))
		}
		// A sub-directory of the home volume: kubelet creates it, and the
		// rest of home stays read-only.
		mounts = append(mounts, corev1.VolumeMount{Name: VolHome, MountPath: path.Join(HomeDir, c), SubPath: c})
	}
	return mounts, warns
}

// agentEnv is the agent container's environment: the session's variables,
// the proxy's when the network is proxied, and env.set in name order. The
// warning says env.pass has nothing to pass from.
func agentEnv(p *profiles.Profile, o Options, sessionVar corev1.EnvVar) ([]corev1.EnvVar, []string) {
	var warns []string
	env := []corev1.EnvVar{
		sessionVar,
		{Name: "FEDMEM_VAULT", Value: VaultDir},
		{Name: "FEDMEM_INBOX", Value: InboxDir},
		{Name: "FEDMEM_PROFILE", Value: p.Name},
		{Name: "HOME", Value: HomeDir},
	}
	if profiles.Proxied(p.Network) {
		for _, k := range []string{"HTTPS_PROXY", "HTTP_PROXY", "https_proxy", "http_proxy"} {
			env = append(env, corev1.EnvVar{Name: k, Value: o.ProxyURL})
		}
	}
	keys := make([]string, 0, len(p.Env.Set))
	for k := range p.Env.Set {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		env = append(env, corev1.EnvVar{Name: k, Value: strings.ReplaceAll(p.Env.Set[k], "${HOME}", HomeDir)})
	}
	if len(p.Env.Pass) > 0 {
		warns = append(warns, fmt.Sprintf("env.pass (%s): nothing passes from a caller into a pod; give the agent its variables (API keys) through a Secret you add to the container", strings.Join(p.Env.Pass, ", ")))
	}
	return env, warns
}

// unrendered warns of what the profile asks that a pod cannot give: limits
// with no per-container Kubernetes field, host paths and sockets, Landlock,
// a proposed workdir, run_as.
func unrendered(p *profiles.Profile, o Options) []string {
	var warns []string
	if p.Limits.Pids > 0 {
		warns = append(warns, fmt.Sprintf("limits.pids %d: Kubernetes has no per-container pid limit; set the kubelet's podPidsLimit on the nodes", p.Limits.Pids))
	}
	if p.Limits.FileSize > 0 {
		warns = append(warns, fmt.Sprintf("limits.file_size %d: no Kubernetes equivalent (RLIMIT_FSIZE); not enforced in the pod", p.Limits.FileSize))
	}
	if p.Limits.OpenFiles > 0 {
		warns = append(warns, fmt.Sprintf("limits.open_files %d: no Kubernetes equivalent (RLIMIT_NOFILE is the runtime's default)", p.Limits.OpenFiles))
	}
	if p.Limits.InboxBytes > 0 {
		warns = append(warns, fmt.Sprintf("limits.inbox_bytes %d: the inbox lives on the vault's volume, which has no per-directory quota; the gate's own draft size limits still apply", p.Limits.InboxBytes))
	}
	if len(p.Writable) > 0 {
		warns = append(warns, fmt.Sprintf("writable %v: host paths are not rendered into a pod (nothing of the host is mounted)", p.Writable))
	}
	if len(p.UnixSockets) > 0 {
		warns = append(warns, fmt.Sprintf("unix_sockets %v: host sockets are not rendered into a pod (none is reachable)", p.UnixSockets))
	}
	for _, req := range p.Require {
		if req == "landlock" {
			warns = append(warns, "require: landlock: Kubernetes cannot ask for Landlock; the pod relies on its mounts, seccomp and (with --apparmor) AppArmor")
		}
	}
	if p.Propose() {
		warns = append(warns, "workdir: propose: not rendered; the pod's workdir is its own volume, written directly (the pod is its own proposal: nothing of the host's tree is in it)")
	}
	if p.RunAs != "" {
		warns = append(warns, fmt.Sprintf("run_as %q: the agent runs as --agent-uid %d in the pod", p.RunAs, o.AgentUID))
	}
	return warns
}

// gateSidecar is the gate: a native sidecar (an init container that keeps
// running), so it is up before the agent starts and outlives it.
func gateSidecar(o Options) corev1.Container {
	gateSC := hardened(o.GateUID, o.GateGID, &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault})
	return corev1.Container{
		Name:          ContainerGate,
		Image:         o.GateImage,
		RestartPolicy: ptr(corev1.ContainerRestartPolicyAlways),
		Command: []string{"fedmem", "gate", "run",
			"--vault", VaultDir, "--state", StateDir, "--socket", path.Join(ReviewDir, "review.sock")},
		VolumeMounts: []corev1.VolumeMount{
			{Name: VolData, MountPath: DataDir},
			{Name: VolReview, MountPath: ReviewDir},
		},
		SecurityContext: gateSC,
	}
}

// inboxPrep makes the session's inbox directory, as the agent (owner agent
// uid, group from 90-inbox, mode 2770) before the agent starts, the way
// fedmem-run makes it on a host. It runs fedmem's code, not the agent's,
// and is the only container that sees 90-inbox as a whole.
func inboxPrep(o Options, sessionVar corev1.EnvVar, inboxSub string, localhost *corev1.SeccompProfile) corev1.Container {
	return corev1.Container{
		Name:    ContainerInbox,
		Image:   o.GateImage,
		Command: []string{"fedmem", "render", "inbox", "--dir", path.Join(VaultDir, vault.InboxDir), "--session", "$(" + sessionEnv + ")"},
		Env:     []corev1.EnvVar{sessionVar},
		VolumeMounts: []corev1.VolumeMount{
			{Name: VolData, MountPath: path.Join(VaultDir, vault.InboxDir), SubPath: inboxSub},
		},
		SecurityContext: hardened(o.AgentUID, o.AgentGID, localhost),
	}
}

// egressRules are the NetworkPolicy egress rules for the profile's network
// mode (nil: no egress at all).
func egressRules(p *profiles.Profile, o Options) ([]networkingv1.NetworkPolicyEgressRule, []string, error) {
	switch {
	case p.Network == profiles.NetworkNone:
		return nil, nil, nil
	case p.Network == profiles.NetworkHost:
		return []networkingv1.NetworkPolicyEgressRule{{}}, []string{
			"network: host has no pod equivalent: the pod keeps its own network namespace (never hostNetwork) and its egress is NOT restricted; use allowlist or public"}, nil
	case profiles.Proxied(p.Network):
	default:
		return nil, nil, optErr("network %q has no Kubernetes rendering", p.Network)
	}
	u, err := url.Parse(o.ProxyURL)
	if err != nil || u.Hostname() == "" || (u.Scheme != "http" && u.Scheme != "https") {
		return nil, nil, optErr("--proxy-url %q is not http://HOST:PORT", o.ProxyURL)
	}
	port := 3128
	if ps := u.Port(); ps != "" {
		if port, err = strconv.Atoi(ps); err != nil || port < 1 || port > 65535 {
			return nil, nil, optErr("--proxy-url %q: bad port", o.ProxyURL)
		}
	} else if u.Scheme == "https" {
		port = 443
	} else {
		port = 80
	}
	peer := networkingv1.NetworkPolicyPeer{PodSelector: &metav1.LabelSelector{MatchLabels: copyMap(o.ProxySelector)}}
	if o.ProxyNamespace != "" {
		peer.NamespaceSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"kubernetes.io/metadata.name": o.ProxyNamespace}}
	}
	rules := []networkingv1.NetworkPolicyEgressRule{{
		To:    []networkingv1.NetworkPolicyPeer{peer},
		Ports: []networkingv1.NetworkPolicyPort{{Protocol: ptr(corev1.ProtocolTCP), Port: ptr(intstr.FromInt32(int32(port)))}},
	}}
	var warns []string
	if net.ParseIP(u.Hostname()) == nil {
		// The agent must resolve the proxy's name: cluster DNS only.
		dns := networkingv1.NetworkPolicyPeer{
			NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"kubernetes.io/metadata.name": "kube-system"}},
			PodSelector:       &metav1.LabelSelector{MatchLabels: map[string]string{"k8s-app": "kube-dns"}},
		}
		rules = append(rules, networkingv1.NetworkPolicyEgressRule{
			To: []networkingv1.NetworkPolicyPeer{dns},
			Ports: []networkingv1.NetworkPolicyPort{
				{Protocol: ptr(corev1.ProtocolUDP), Port: ptr(intstr.FromInt32(53))},
				{Protocol: ptr(corev1.ProtocolTCP), Port: ptr(intstr.FromInt32(53))},
			},
		})
		warns = append(warns, fmt.Sprintf("--proxy-url host %q is a name: egress to cluster DNS (kube-system/k8s-app=kube-dns, port 53) is allowed so the agent can resolve it, and DNS queries can carry data out; give the proxy's ClusterIP to close that", u.Hostname()))
	}
	if p.Network == profiles.NetworkAllowlist {
		allow, _ := p.AllowList() // checked by the annotation's
		warns = append(warns, fmt.Sprintf("network: allowlist: the proxy (%s) must enforce %s (also in the %s annotation); the NetworkPolicy only keeps the pod from reaching anything but the proxy", o.ProxyURL, strings.Join(allow, ", "), AnnotAllow))
	}
	return rules, warns, nil
}

// Format is the output encoding.
type Format string

// Formats.
const (
	FormatYAML Format = "yaml"
	FormatJSON Format = "json"
)

// Encode writes the objects as a YAML stream ("---" between documents) or
// as one JSON v1 List.
func (r *Rendered) Encode(f Format) ([]byte, error) {
	var buf bytes.Buffer
	switch f {
	case FormatYAML, "":
		for i, obj := range r.Objects {
			b, err := yaml.Marshal(obj)
			if err != nil {
				return nil, err
			}
			if i > 0 {
				buf.WriteString("---\n")
			}
			buf.Write(b)
		}
	case FormatJSON:
		items := make([]json.RawMessage, 0, len(r.Objects))
		for _, obj := range r.Objects {
			b, err := json.Marshal(obj)
			if err != nil {
				return nil, err
			}
			items = append(items, b)
		}
		b, err := json.MarshalIndent(map[string]any{"apiVersion": "v1", "kind": "List", "items": items}, "", "  ")
		if err != nil {
			return nil, err
		}
		buf.Write(b)
		buf.WriteByte('\n')
	default:
		return nil, optErr("-o %q is not yaml or json", f)
	}
	return buf.Bytes(), nil
}

func ptr[T any](v T) *T { return &v }

func copyMap(m map[string]string) map[string]string {
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}
