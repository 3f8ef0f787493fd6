// Package agents runs real agents and real tools under fedmem-run: builds
// with the profiles' persistent state (go, npm, python venv), and Claude
// Code driven by a scripted model on loopback through fedmem-run's proxy
// (the agent-in-the-loop test). Root-only; tools that are not installed
// skip, or fail under FEDMEM_REQUIRE_CLIENTS=1.
package agents
