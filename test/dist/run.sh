#!/usr/bin/env bash
# make test-dist: install the Debian package `make dist` built into a clean
# Debian 12 root (debootstrap --variant=minbase from Debian's archive, the
# machine's apt mirror), then run `fedmem doctor` and `fedmem demo` from the
# installed files inside it, as a new user would after `apt install`.
# Needs root and debootstrap. FEDMEM_DIST_CACHE keeps the pristine root's
# tarball between runs (the root is unpacked fresh each time).
set -euo pipefail
deb=${FEDMEM_DEB:?FEDMEM_DEB names the .deb}
deb=$(readlink -f "$deb")
if [[ $(id -u) != 0 ]]; then
	echo "test-dist: needs root (chroot, mounts)"; [[ ${FEDMEM_REQUIRE_ROOT:-} == 1 ]] && exit 1; exit 0
fi
if ! command -v debootstrap >/dev/null; then
	echo "test-dist: debootstrap not installed (apt-get install debootstrap)"; [[ ${FEDMEM_REQUIRE_ROOT:-} == 1 ]] && exit 1; exit 0
fi
cache=${FEDMEM_DIST_CACHE:-$(dirname "$0")/../../.cache/dist}
mkdir -p "$cache"
cache=$(readlink -f "$cache")
mirror=$(awk '/^URIs:/ {print $2; exit}' /etc/apt/sources.list.d/debian.sources 2>/dev/null || true)
mirror=${mirror:-http://deb.debian.org/debian}
tarball=$cache/bookworm-minbase.tar
root=$(mktemp -d /var/tmp/fedmem-dist-root.XXXXXX)
chmod 0755 "$root" # it becomes /: every user must traverse it
mounted=()
cleanup() {
	for ((i = ${#mounted[@]} - 1; i >= 0; i--)); do umount -l "${mounted[i]}" 2>/dev/null || true; done
	rm -rf --one-file-system "$root"
}
trap cleanup EXIT
# A signal (CI's timeout, Ctrl-C) ends the script through exit, so the
# EXIT trap unmounts and removes the root.
trap 'exit 143' TERM
trap 'exit 130' INT
t0=$SECONDS
if [[ -s $tarball ]] && ! tar -C "$root" -xf "$tarball" 2>"$cache/untar.log"; then
	echo "test-dist: the cached root $tarball does not unpack ($(tail -1 "$cache/untar.log")); making a new one"
	rm -f "$tarball"
	rm -rf --one-file-system "$root" && mkdir -m 0755 "$root"
fi
if [[ ! -s $tarball ]]; then
	echo "test-dist: debootstrap bookworm minbase from $mirror (once; cached in $tarball)…"
	debootstrap --variant=minbase bookworm "$root" "$mirror" >"$cache/debootstrap.log" 2>&1 || {
		tail -20 "$cache/debootstrap.log"
		echo "test-dist: debootstrap from $mirror failed (log: $cache/debootstrap.log)"
		exit 1
	}
	tar -C "$root" -cf "$tarball.tmp" . && mv "$tarball.tmp" "$tarball"
fi
chmod 0755 "$root" # tar restored the temp dir's 0700; it becomes /
echo "test-dist: clean root ready in $((SECONDS - t0))s"
for m in proc sys dev dev/pts; do
	mkdir -p "$root/$m"
	case $m in
	proc) mount -t proc proc "$root/proc" ;;
	*) mount --rbind "/$m" "$root/$m"; mount --make-rslave "$root/$m" ;;
	esac
	mounted+=("$root/$m")
done
cp /etc/resolv.conf "$root/etc/resolv.conf"
cp "$deb" "$root/tmp/fedmem.deb"
# Into the clean root by pivot_root in a private mount namespace, not
# chroot: the kernel refuses user namespaces to a chrooted process
# (current_chrooted(), EPERM), and fedmem-run is made of them.
in_root() {
	unshare --mount --fork -- /bin/bash -c '
		set -e; r=$1; shift
		mount --make-rprivate /
		mount --rbind "$r" "$r"
		cd "$r"; mkdir -p .oldroot
		pivot_root . .oldroot
		cd /
		umount -l /.oldroot
		exec /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root TERM=dumb "$@"' in_root "$root" "$@"
}
echo "test-dist: apt-get install ./fedmem.deb…"
in_root apt-get update -qq
DEBIAN_FRONTEND=noninteractive in_root apt-get install -y -qq --no-install-recommends /tmp/fedmem.deb >"$cache/install.log" 2>&1 || { tail -30 "$cache/install.log"; exit 1; }
for f in /usr/bin/fedmem /usr/bin/fedmem-run /usr/bin/fedmem-cred /usr/share/man/man1/fedmem.1.gz /usr/share/man/man1/fedmem-run.1.gz /usr/share/man/man1/fedmem-review-approve.1.gz \
	/usr/share/bash-completion/completions/fedmem /lib/systemd/system/fedmem-gate@.service /usr/lib/sysusers.d/fedmem.conf /etc/apparmor.d/usr.bin.fedmem-run; do
	[[ -e $root$f ]] || { echo "test-dist: the package did not install $f"; exit 1; }
done
in_root getent passwd fedmem-gate >/dev/null || { echo "test-dist: postinst made no fedmem-gate user"; exit 1; }
in_root fedmem --version
in_root fedmem-run --version
echo "test-dist: fedmem doctor (installed)…"
in_root fedmem doctor || { echo "test-dist: fedmem doctor failed inside the clean root"; exit 1; }
# The credential helper is found beside the installed fedmem-run: the
# claude profile's credentials would be refused without it.
expl=$(in_root /bin/sh -c 'cd /var/tmp && fedmem init /var/tmp/explain-vault >/dev/null && fedmem-run --vault /var/tmp/explain-vault --profile claude --explain -- true' 2>&1) || { echo "$expl"; echo "test-dist: fedmem-run --explain failed"; exit 1; }
grep -q "credentials: injected by /usr/bin/fedmem-cred" <<<"$expl" || { grep -i credentials <<<"$expl"; echo "test-dist: the installed fedmem-run does not find its credential helper"; exit 1; }
echo "test-dist: fedmem demo (installed)…"
in_root fedmem demo >"$cache/demo.log" 2>&1 || { tail -40 "$cache/demo.log"; echo "test-dist: fedmem demo failed inside the clean root"; exit 1; }
tail -5 "$cache/demo.log"
echo "test-dist: ok: the package installs into a clean Debian 12 root; doctor and demo pass there ($((SECONDS - t0))s)"
