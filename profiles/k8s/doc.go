// Package k8s renders a fedmem profile as Kubernetes manifests that carry the
// same guarantees as a local fedmem-run session: the agent and the gate in
// one pod (or a kubernetes-sigs/agent-sandbox SandboxTemplate) under
// different uids, the vault read-only to the agent, only the session's own
// inbox writable, no capability, no privilege escalation, a Localhost seccomp
// profile generated from sandbox/seccomp's rules, and a NetworkPolicy that
// matches the profile's network mode.
//
// What it promises:
//
//   - [Render] and [SeccompProfile] are pure: they build k8s.io/api objects
//     (and the seccomp JSON) from a resolved profile and options, and touch
//     nothing. Options may only tighten a profile (a runtime class, an
//     AppArmor profile); every place where Kubernetes cannot express a limit
//     or a mode is named in [Rendered.Warnings], never silently dropped.
//   - The seccomp profile is computed from [seccomp.Rules] (the one list of
//     rules, data only), never copied: a rule Kubernetes' seccomp format
//     cannot express exactly makes SeccompProfile fail, except where the
//     translation is stricter than the local filter, which is listed in its
//     Notes.
//   - [PrepareInbox] is the one function here that touches the file system:
//     the rendered pod's init container calls it (`fedmem render inbox`) to
//     create the session's inbox directory before the agent starts.
//
// docs/kubernetes.md explains the pod layout and says what was and was not
// run against a real cluster.
package k8s
