#!/usr/bin/env bash
# Starts a private containerd (root, state and socket under DIR) for the
# container backend tests and prints the socket's path; `stop.sh DIR` ends
# it. The binaries (containerd, containerd-shim-runc-v2, ctr) come from
# BIN (default: beside this script's caller's PATH), runc from PATH.
#
#   test/containerd/start.sh DIR [BIN]
set -euo pipefail
dir=${1:?usage: start.sh DIR [BIN]}
bin=${2:-$(dirname "$(command -v containerd)")}
mkdir -p "$dir/root" "$dir/state"
cat >"$dir/config.toml" <<TOML
version = 3
root = "$dir/root"
state = "$dir/state"
disabled_plugins = ["io.containerd.grpc.v1.cri", "io.containerd.cri.v1.images", "io.containerd.cri.v1.runtime", "io.containerd.podsandbox.controller.v1.podsandbox", "io.containerd.sandbox.controller.v1.shim", "io.containerd.tracing.processor.v1.otlp", "io.containerd.internal.v1.tracing"]
[grpc]
  address = "$dir/containerd.sock"
[ttrpc]
  address = "$dir/containerd.sock.ttrpc"
TOML
PATH="$bin:$PATH" nohup "$bin/containerd" --config "$dir/config.toml" >"$dir/containerd.log" 2>&1 &
echo $! >"$dir/containerd.pid"
# Wait for the socket to answer, not for a fixed time.
for _ in $(seq 1 300); do
  if "$bin/ctr" --address "$dir/containerd.sock" version >/dev/null 2>&1; then
    echo "$dir/containerd.sock"
    exit 0
  fi
  if ! kill -0 "$(cat "$dir/containerd.pid")" 2>/dev/null; then
    echo "containerd exited:" >&2; cat "$dir/containerd.log" >&2; exit 1
  fi
  sleep 0.1
done
echo "containerd did not answer on $dir/containerd.sock" >&2
cat "$dir/containerd.log" >&2
exit 1
