// Package credentials is a session's credentials (guarantee 8): the
// caller's secrets the agent may use but never hold. Read takes each from
// its source outside the sandbox (an environment variable, a JSON or YAML
// file, a command run as the caller) and makes a placeholder of the same
// shape; Start puts the placeholders where the agent looks (its
// environment, a generated copy of each source file bound read-only over
// the real one, the seeded state copies) and starts fedmem-cred, the
// helper that holds the session CA's key and exchanges a placeholder for
// the real value on the wire, only towards the credential's hosts.
//
// Promises:
//   - a source that cannot be read refuses the session before anything of
//     it exists: never an agent with a real value inside;
//   - the real values stay in fedmem-run and its helper; refreshed ones
//     are written back into their source files after the session,
//     atomically, keeping mode and owner;
//   - a source file replaced outside while the agent runs ends the session
//     (Watch): the sandbox's cover of it may be gone.
//
// It takes plain data (Source, the Plan, the environment) and reads no
// profile: sandbox/launch makes the Sources from the profile's entries.
package credentials
