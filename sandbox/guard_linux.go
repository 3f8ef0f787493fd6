package sandbox

import (
	"github.com/fedmem/fedmem/mounts"
	"github.com/fedmem/fedmem/sandbox/guard"
)

// guardPlaceholders is guard.Placeholders for spec, around the whole
// session (fedmem-run, on the host): its refusal (a protected directory
// another process holds locked) is the session's error at stage protect.
func guardPlaceholders(spec *Spec) (release func(coversLost bool), err error) {
	release, err = guard.Placeholders(&guard.Spec{Plan: spec.Plan, Event: spec.Event})
	if err != nil {
		err = &Error{Code: ExitFedmemError, Stage: mounts.StageProtect, Msg: err.Error()}
	}
	return release, err
}
