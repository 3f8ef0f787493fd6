package verify

import (
	"os"
	"os/exec"
	"syscall"
)

// killGroupOnCancel puts fedmem-run in its own process group and, when the
// backstop context ends, kills the whole group: fedmem-run and anything it
// left behind, so a stuck verifier can never hold the gate.
func killGroupOnCancel(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error {
		if cmd.Process == nil {
			return nil
		}
		return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
}

// ownedByMe reports whether the gate's uid owns a file.
func ownedByMe(fi os.FileInfo) bool {
	st, ok := fi.Sys().(*syscall.Stat_t)
	return ok && int(st.Uid) == os.Geteuid()
}
