package mounts

// Stage names where a session failed: sandbox.Error.Stage and the
// report's error.stage. Typed so that a backend or the launcher names one
// of these stages, never a string of its own.
type Stage string

// The sandbox's stages (its backends and pid 1).
const (
	StageBackend      Stage = "backend"      // the backend is unknown or unavailable, or refused the plan
	StageCapabilities Stage = "capabilities" // pid 1 could not drop every capability
	StageConfig       Stage = "config"       // pid 1 could not read its configuration (the parent's JSON)
	StageIdentity     Stage = "identity"     // the agent's uid, gid or groups cannot be set up
	StageInit         Stage = "init"         // the sandbox's pid 1 ended without reporting a status
	StageLandlock     Stage = "landlock"     // Landlock's rules could not be applied (or are required and absent)
	StageLimits       Stage = "limits"       // a resource limit (cgroup, rlimit) could not be set
	StageMounts       Stage = "mounts"       // the Plan's mounts could not be realised
	StageNetwork      Stage = "network"      // the sandbox's network (loopback, proxy link) could not be set up
	StageNoNewPrivs   Stage = "no_new_privs" // PR_SET_NO_NEW_PRIVS failed
	StagePrctl        Stage = "prctl"        // pid 1 could not make itself non-dumpable (PR_SET_DUMPABLE)
	StageProtect      Stage = "protect"      // the persistence placeholders could not be guarded (another process holds their lock)
	StageReceipts     Stage = "receipts"     // read receipts are required and the vault's reads could not be recorded
	StagePTY          Stage = "pty"          // the agent's pseudo-terminal could not be made
	StageSeccomp      Stage = "seccomp"      // the seccomp filter could not be installed
	StageSetup        Stage = "setup"        // the parent could not prepare the sandbox (its own executable, pipes, files)
	StageSpec         Stage = "spec"         // the container's OCI spec could not be made from the Plan
	StageStart        Stage = "start"        // the sandbox (its pid 1, or the container helper) could not be started
	StageVerify       Stage = "verify"       // the live mount table does not match the Plan (fail closed)
	StageWait         Stage = "wait"         // pid 1's wait for the agent failed
)

// The launcher's stages, before the sandbox is built (sandbox/launch).
const (
	StageFlags       Stage = "flags"       // the command line
	StageProfile     Stage = "profile"     // finding, parsing or checking the profile
	StageResolve     Stage = "resolve"     // vault, workdir, identity, the mount plan
	StageOutput      Stage = "output"      // --events could not be opened
	StageState       Stage = "state"       // the gate's state dir, the profile's state
	StageInbox       Stage = "inbox"       // the session inbox cannot be reached or made
	StageCredentials Stage = "credentials" // a credential could not be replaced
	StageLaunch      Stage = "launch"      // any other failure before the agent ran
)
