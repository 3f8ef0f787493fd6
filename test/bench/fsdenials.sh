#!/bin/sh
# fsdenials.sh: the cost of reporting refused filesystem writes
# (--fs-denials; docs/events.md, "Denials"). Creates 10,000 files in /tmp
# with a Python loop, outside fedmem (bare, in /dev/shm: a tmpfs like the
# sandbox's private /tmp; the host's /tmp may be a disk), inside with --fs-denials=false
# and inside with --fs-denials, ROUNDS times in turn (bare, off, on, …),
# and prints each one's median of the loop's own time (the sandbox's
# start-up is not in it).
#
#   test/bench/fsdenials.sh [ROUNDS]   (FEDMEM_RUN=path/to/fedmem-run; default: in PATH)
set -eu
rounds=${1:-9}
run=${FEDMEM_RUN:-fedmem-run}
fedmem=${FEDMEM:-$(dirname "$(command -v "$run")")/fedmem}
py=${PYTHON:-/usr/bin/python3}
dir=$(mktemp -d /var/tmp/fsdenials-bench.XXXXXX)
trap 'rm -rf "$dir"' EXIT
"$fedmem" init "$dir/vault" >/dev/null
mkdir "$dir/work"
chmod 0755 "$dir" "$dir/work"
cat >"$dir/work/create.py" <<'PY'
import os, shutil, sys, tempfile, time
d = tempfile.mkdtemp(dir=sys.argv[1])
t = time.monotonic()
for i in range(10000):
    with open(os.path.join(d, "f%d" % i), "w") as f:
        f.write("x")
print("%.3f" % (time.monotonic() - t))
shutil.rmtree(d)
PY
for i in $(seq "$rounds"); do
	(cd "$dir/work" && "$py" create.py /dev/shm) >>"$dir/bare"
	"$run" --vault "$dir/vault" --workdir "$dir/work" --fs-denials=false -- "$py" create.py /tmp >>"$dir/off"
	"$run" --vault "$dir/vault" --workdir "$dir/work" --fs-denials -- "$py" create.py /tmp >>"$dir/on"
done
median() { sort -n "$1" | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }
range() { sort -n "$1" | awk 'NR==1{lo=$1} {hi=$1} END {print lo "–" hi}'; }
for k in bare off on; do
	printf '%-4s median %ss (min–max %ss, %d runs)\n' "$k" "$(median "$dir/$k")" "$(range "$dir/$k")" "$rounds"
done
