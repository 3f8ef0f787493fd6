package main

import (
	"fmt"
	"io"
	"runtime/debug"
	"strings"

	"github.com/fedmem/fedmem/profiles"
)

// version is set at build time with -ldflags "-X main.version=v1.2.3"
// (make build does, from git describe); otherwise the module version from
// the build info, else "dev".
var version = ""

func buildVersion() string {
	if version != "" {
		return version
	}
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return bi.Main.Version
	}
	return "dev"
}

// builtinWords are the built-in profiles' names, for the completion
// scripts (the bash script adds the search path's files when it runs).
var builtinWords = strings.Join(profiles.Builtins(), " ")

// flagWords are fedmem-run's flags, for the completion scripts.
const flagWords = "--vault --profile --workdir --report --explain --json --network --agent-user --events --fs-denials --timeout --backend --containerd-address --image --version --completion --help"

// completions are fedmem-run's shell completion scripts: flags, profile
// names (built-in, from `fedmem profile list` when fedmem is installed,
// else files), directories for --vault/--workdir, then the agent's own
// command line.
var completions = map[string]string{
	"bash": `# bash completion for fedmem-run; works with or without the bash-completion package
_fedmem_run_profiles() {
  # The built-ins, then the search path's files (docs/profiles.md, "Search path").
  local d f names="` + builtinWords + `"
  for d in ./.fedmem/profiles "${HOME-}/.config/fedmem/profiles" /etc/fedmem/profiles; do
    for f in "$d"/*.yaml; do
      [[ -f $f ]] || continue
      f=${f##*/}; names+=" ${f%.yaml}"
    done
  done
  printf '%s\n' "$names"
}
_fedmem_run_command() {
  # The agent's command line from word $1 on: bash-completion's
  # _command_offset when it is loaded, else commands, then files.
  if declare -F _command_offset >/dev/null 2>&1; then _command_offset "$1"; return; fi
  local IFS=$'\n'
  if [[ $COMP_CWORD -eq $1 ]]; then COMPREPLY=($(compgen -c -- "$cur")); else COMPREPLY=($(compgen -f -- "$cur")); fi
}
_fedmem_run() {
  local cur prev; cur="${COMP_WORDS[COMP_CWORD]}"; prev="${COMP_WORDS[COMP_CWORD-1]}"
  COMPREPLY=()
  local i; for ((i=1; i<COMP_CWORD; i++)); do
    case "${COMP_WORDS[i]}" in --) _fedmem_run_command $((i+1)); return;; -*) ;; *) case "${COMP_WORDS[i-1]}" in --vault|--profile|--workdir|--report|--network|--agent-user|--events|--timeout|--backend|--containerd-address|--image|--completion) ;; *) _fedmem_run_command $i; return;; esac;; esac
  done
  local IFS=$' \t\n'
  case "$prev" in
    --vault|--workdir) COMPREPLY=($(compgen -d -- "$cur")); return;;
    --report|--events) COMPREPLY=($(compgen -f -- "$cur")); return;;
    --profile) COMPREPLY=($(compgen -W "$(_fedmem_run_profiles)" -- "$cur") $(compgen -f -X '!*.yaml' -- "$cur")); return;;
    --network) COMPREPLY=($(compgen -W "none allowlist public host" -- "$cur")); return;;
    --backend) COMPREPLY=($(compgen -W "namespace runc containerd" -- "$cur")); return;;
    --completion) COMPREPLY=($(compgen -W "bash zsh fish" -- "$cur")); return;;
  esac
  if [[ "$cur" == -* ]]; then COMPREPLY=($(compgen -W "` + flagWords + `" -- "$cur")); else COMPREPLY=($(compgen -c -- "$cur")); fi
}
complete -F _fedmem_run fedmem-run
`,
	"zsh": `#compdef fedmem-run
# zsh completion for fedmem-run
_arguments -S \
  '--vault[vault directory]:vault:_files -/' \
  '--profile[profile name or YAML file]:profile:(` + builtinWords + `)' \
  '--workdir[working directory]:dir:_files -/' \
  '--report[JSON session report]:file:_files' \
  '--events[events as JSON lines]:file:_files' \
  '--fs-denials[report refused filesystem writes]' \
  '--explain[print the plan, do not run]' \
  '--json[with --explain: JSON]' \
  '--network[tighten the network]:mode:(none allowlist public host)' \
  '--agent-user[root only: the agent user]:user:_users' \
  '--timeout[wall time]:duration:' \
  '--backend[sandbox backend]:backend:(namespace runc containerd)' \
  '--containerd-address[containerd socket]:socket:_files' \
  '--image[containerd image]:image:' \
  '--version[print the version]' \
  '--completion[print a completion script]:shell:(bash zsh fish)' \
  '(-)*::agent command:_normal'
`,
	"fish": `# fish completion for fedmem-run
complete -c fedmem-run -l vault -r -a '(__fish_complete_directories)' -d 'vault directory'
complete -c fedmem-run -l profile -r -a '` + builtinWords + `' -d 'profile name or YAML file'
complete -c fedmem-run -l workdir -r -a '(__fish_complete_directories)' -d 'working directory'
complete -c fedmem-run -l report -r -F -d 'JSON session report'
complete -c fedmem-run -l events -r -F -d 'events as JSON lines'
complete -c fedmem-run -l fs-denials -d 'report refused filesystem writes'
complete -c fedmem-run -l explain -d 'print the plan, do not run'
complete -c fedmem-run -l json -d 'with --explain: JSON'
complete -c fedmem-run -l network -r -a 'none allowlist public host' -d 'tighten the network'
complete -c fedmem-run -l agent-user -r -d 'root only: the agent user'
complete -c fedmem-run -l timeout -r -d 'wall time'
complete -c fedmem-run -l backend -r -a 'namespace runc containerd' -d 'sandbox backend'
complete -c fedmem-run -l containerd-address -r -F -d 'containerd socket'
complete -c fedmem-run -l image -r -d 'containerd image'
complete -c fedmem-run -l version -d 'print the version'
complete -c fedmem-run -l completion -r -a 'bash zsh fish' -d 'print a completion script'
complete -c fedmem-run -n '__fish_is_first_arg; or not __fish_seen_subcommand_from --' -a '(__fish_complete_command)'
`,
}

// printCompletion writes the script for shell, or says which exist.
func printCompletion(w, errw io.Writer, shell string) int {
	s, ok := completions[shell]
	if !ok {
		fmt.Fprintf(errw, "fedmem-run: --completion %q: want bash, zsh or fish\n", shell)
		return 2
	}
	io.WriteString(w, s)
	return 0
}
