package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/fedmem/fedmem/profiles"
	"github.com/fedmem/fedmem/profiles/k8s"
)

func init() { subcommands = append(subcommands, newRenderCmd) }

func newRenderCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "render",
		Short: "Render a profile for another platform (Kubernetes)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cmd.SetOut(cmd.ErrOrStderr())
			_ = cmd.Help()
			return usageErrorf("a render target is required (k8s, seccomp)")
		},
	}
	cmd.AddCommand(newRenderK8sCmd(), newRenderSeccompCmd(), newRenderInboxCmd())
	return cmd
}

type renderK8sOptions struct {
	profile       string
	kind          string
	output        string
	proxySelector []string
	k8s.Options
}

func newRenderK8sCmd() *cobra.Command {
	var o renderK8sOptions
	cmd := &cobra.Command{
		Use:   "k8s --profile P --image IMG --gate-image IMG [flags] [-- AGENT-COMMAND...]",
		Short: "Print Kubernetes manifests that run an agent under a profile, with the gate beside it",
		Long: `k8s prints, on stdout, the manifests that give an agent in Kubernetes the
guarantees of fedmem-run: a ConfigMap with the Localhost seccomp profile
generated from fedmem's rules (install it on the nodes, see docs/kubernetes.md),
then a NetworkPolicy and a Pod (--kind pod) or an agent-sandbox SandboxTemplate
(--kind agent-sandbox). The agent runs as --agent-uid with no capability, a
read-only image, the vault read-only and only its session inbox writable; the
gate runs beside it as a native sidecar under --gate-uid. Whatever the profile
asks that Kubernetes cannot express is named on stderr as a warning.`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if o.profile == "" {
				return usageErrorf("--profile is required")
			}
			if len(args) > 0 {
				o.Command = args
			}
			sel, err := parseSelector(o.proxySelector)
			if err != nil {
				return err
			}
			o.ProxySelector = sel
			o.Kind = k8s.Kind(o.kind)
			p, hash, err := profiles.Load(o.profile)
			if err != nil {
				return err
			}
			r, err := k8s.Render(p, hash, o.Options)
			if err != nil {
				return usageErrorf("%v", err)
			}
			out, err := r.Encode(k8s.Format(o.output))
			if err != nil {
				return usageErrorf("%v", err)
			}
			warn(cmd.ErrOrStderr(), r.Warnings)
			_, err = cmd.OutOrStdout().Write(out)
			return err
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.profile, "profile", "", "profile name or file (required)")
	f.StringVar(&o.kind, "kind", string(k8s.KindPod), "pod or agent-sandbox")
	f.StringVarP(&o.output, "output", "o", "yaml", "yaml or json")
	f.StringVar(&o.Name, "name", "", "object name (default fedmem-<profile>)")
	f.StringVar(&o.Namespace, "namespace", "", "namespace of the objects (default: none, kubectl's)")
	f.StringVar(&o.Image, "image", "", "the agent's image (required)")
	f.StringVar(&o.GateImage, "gate-image", "", "an image with the fedmem binary on PATH (required)")
	f.Int64Var(&o.AgentUID, "agent-uid", k8s.DefaultAgentUID, "uid of the agent")
	f.Int64Var(&o.AgentGID, "agent-gid", k8s.DefaultAgentUID, "gid of the agent: the vault's agent group")
	f.Int64Var(&o.GateUID, "gate-uid", k8s.DefaultGateUID, "uid of the gate, owner of the vault")
	f.Int64Var(&o.GateGID, "gate-gid", k8s.DefaultGateUID, "gid of the gate")
	f.StringVar(&o.RuntimeClass, "runtime-class", "", "RuntimeClass of the pod (gvisor, kata, or any name)")
	f.StringVar(&o.AppArmor, "apparmor", "", "AppArmor profile of the agent: runtime/default or localhost/NAME")
	f.StringVar(&o.VaultClaim, "vault-claim", k8s.DefaultVaultClaim, "PersistentVolumeClaim holding vault/ and state/")
	f.StringVar(&o.ProxyURL, "proxy-url", k8s.DefaultProxyURL, "egress proxy for network allowlist/public")
	f.StringSliceVar(&o.proxySelector, "proxy-selector", nil, "labels of the proxy's pods, KEY=VALUE (default app.kubernetes.io/name=fedmem-proxy)")
	f.StringVar(&o.ProxyNamespace, "proxy-namespace", "", "namespace of the proxy's pods (default: the pod's)")
	return cmd
}

func newRenderSeccompCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "seccomp",
		Short: "Print the seccomp profile (JSON) to install on nodes as /var/lib/kubelet/seccomp/profiles/fedmem-<profile>.json",
		Long: `seccomp prints fedmem's seccomp rules as a Localhost seccomp profile (the JSON
containerd and CRI-O read). Every profile uses the same rules; the file is
named after the profile because the pod names it so. Where Kubernetes' format
is stricter than fedmem's own filter, stderr says so.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			r, err := k8s.SeccompProfile()
			if err != nil {
				return internalErrorf("%v", err)
			}
			b, err := r.JSON()
			if err != nil {
				return internalErrorf("%v", err)
			}
			warn(cmd.ErrOrStderr(), r.Notes)
			_, err = cmd.OutOrStdout().Write(b)
			return err
		},
	}
}

// newRenderInboxCmd is the rendered pod's session-inbox init step.
func newRenderInboxCmd() *cobra.Command {
	var dir, session string
	cmd := &cobra.Command{
		Use:    "inbox --dir VAULT/90-inbox --session ID",
		Short:  "Create a session's inbox directory (the init step of a rendered pod)",
		Hidden: true,
		Args:   cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if dir == "" || session == "" {
				return usageErrorf("--dir and --session are required")
			}
			return k8s.PrepareInbox(dir, session)
		},
	}
	cmd.Flags().StringVar(&dir, "dir", "", "the vault's 90-inbox")
	cmd.Flags().StringVar(&session, "session", "", "the session id")
	return cmd
}

func parseSelector(kvs []string) (map[string]string, error) {
	if len(kvs) == 0 {
		return nil, nil
	}
	m := map[string]string{}
	for _, kv := range kvs {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return nil, usageErrorf("--proxy-selector %q is not KEY=VALUE", kv)
		}
		m[k] = v
	}
	return m, nil
}

func warn(w io.Writer, warns []string) {
	for _, s := range warns {
		fmt.Fprintf(w, "fedmem: warning: %s\n", s)
	}
}
