package k8s

import (
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The kubernetes-sigs/agent-sandbox API, extensions group, version v1beta1
// (the storage version in release v0.5.6; v1alpha1 is served too). Its Go
// module (sigs.k8s.io/agent-sandbox) is not reachable through the Go module
// proxy from here, so the few types fedmem renders are declared below with
// the same JSON field names as extensions/api/v1beta1/sandboxtemplate_types.go
// and api/v1beta1/sandbox_types.go. Only what fedmem sets is declared:
// tests decode the output strictly into these types, so a field added here
// by mistake would still be one the upstream types know.

// SandboxTemplateAPIVersion and SandboxTemplateKind identify the object.
const (
	SandboxTemplateAPIVersion = "extensions.agents.x-k8s.io/v1beta1"
	SandboxTemplateKind       = "SandboxTemplate"
)

// SandboxTemplate describes the pod every Sandbox claimed from it runs.
type SandboxTemplate struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              SandboxTemplateSpec `json:"spec"`
}

// SandboxTemplateSpec is upstream's SandboxTemplateSpec (SandboxBlueprint
// inlined) restricted to the fields fedmem sets.
type SandboxTemplateSpec struct {
	// PodTemplate is the pod of each sandbox.
	PodTemplate SandboxPodTemplate `json:"podTemplate"`
	// NetworkPolicy: with management Managed, the controller creates one
	// NetworkPolicy for the template's pods from these rules (ingress and
	// egress default-deny: an empty list blocks everything).
	NetworkPolicy *SandboxNetworkPolicy `json:"networkPolicy,omitempty"`
	// NetworkPolicyManagement is Managed or Unmanaged.
	NetworkPolicyManagement string `json:"networkPolicyManagement,omitempty"`
	// EnvVarsInjectionPolicy: Disallowed keeps a SandboxClaim from setting
	// the agent's environment (LD_PRELOAD, proxy variables…).
	EnvVarsInjectionPolicy string `json:"envVarsInjectionPolicy,omitempty"`
	// VolumeClaimTemplatesPolicy: Disallowed keeps a claim from adding
	// volumes.
	VolumeClaimTemplatesPolicy string `json:"volumeClaimTemplatesPolicy,omitempty"`
}

// SandboxPodTemplate is upstream's PodTemplate: only labels and annotations
// of the metadata are used.
type SandboxPodTemplate struct {
	Spec       corev1.PodSpec     `json:"spec"`
	ObjectMeta SandboxPodMetadata `json:"metadata"`
}

// SandboxPodMetadata is upstream's PodMetadata.
type SandboxPodMetadata struct {
	Labels      map[string]string `json:"labels,omitempty"`
	Annotations map[string]string `json:"annotations,omitempty"`
}

// SandboxNetworkPolicy is upstream's NetworkPolicySpec: the controller sets
// the pod selector and the policy types itself.
type SandboxNetworkPolicy struct {
	Ingress []networkingv1.NetworkPolicyIngressRule `json:"ingress,omitempty"`
	Egress  []networkingv1.NetworkPolicyEgressRule  `json:"egress,omitempty"`
}
