#!/usr/bin/env bash
# Stops the containerd that start.sh DIR started, and its shims.
set -uo pipefail
dir=${1:?usage: stop.sh DIR}
pid=$(cat "$dir/containerd.pid" 2>/dev/null) || exit 0
kill "$pid" 2>/dev/null
for _ in $(seq 1 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
kill -9 "$pid" 2>/dev/null
# Shims outlive containerd by design; end the ones of this state dir only,
# by the pid each recorded.
for f in "$dir"/state/io.containerd.runtime.v2.task/*/*/shim.pid; do
  [ -f "$f" ] && kill -9 "$(cat "$f")" 2>/dev/null
done
umount -R "$dir/state" 2>/dev/null || true
exit 0
