#!/bin/sh
# make test-vm: cgroup v2 limits for real, in a Debian 12 VM booted
# cgroup-v2-only (systemd.unified_cgroup_hierarchy=1), since the build host
# may be hybrid (memory and pids on v1). Not part of `make test`.
#
# Builds a Debian 12 root with debootstrap (Debian's linux-image-amd64 in
# it), bakes bin/fedmem-run, bin/fedmem and test/vm/guest.sh into an ext4
# image (mkfs.ext4 -d: no loop mount), boots it with qemu-system-x86_64
# (KVM when /dev/kvm exists, else software emulation), and prints the
# guest's PASS/FAIL lines. The guest powers itself off; the VM is killed
# at FEDMEM_VM_TIMEOUT seconds (default 3600) and the work directory
# removed either way. The debootstrapped root is cached as a tarball in
# FEDMEM_VM_CACHE (default /var/tmp/fedmem-vm) so later runs skip it.
#
# Needs root (debootstrap), network to deb.debian.org the first time, and
# the packages debootstrap, qemu-system-x86, e2fsprogs (installed with
# apt-get when missing and apt-get exists).
set -eu

here=$(cd "$(dirname "$0")" && pwd)
bin=${FEDMEM_BIN:-$here/../../bin}
cache=${FEDMEM_VM_CACHE:-/var/tmp/fedmem-vm}
mirror=${FEDMEM_VM_MIRROR:-http://deb.debian.org/debian}
timeout=${FEDMEM_VM_TIMEOUT:-3600}

log() { printf 'test-vm: %s\n' "$*" >&2; }
die() { log "FAIL: $*"; exit 1; }

[ "$(id -u)" = 0 ] || die "needs root (debootstrap, image ownership); run: sudo make test-vm"
for f in fedmem-run fedmem; do
	[ -x "$bin/$f" ] || die "$bin/$f missing: make build first (or set FEDMEM_BIN)"
done
need=""
command -v debootstrap >/dev/null || need="$need debootstrap"
command -v qemu-system-x86_64 >/dev/null || need="$need qemu-system-x86"
command -v mkfs.ext4 >/dev/null || need="$need e2fsprogs"
if [ -n "$need" ]; then
	command -v apt-get >/dev/null || die "missing:$need (and no apt-get to install them)"
	log "installing$need"
	DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends $need >&2
fi

work=$(mktemp -d /var/tmp/fedmem-vm-run.XXXXXX)
qpid=""
cleanup() {
	if [ -n "$qpid" ] && kill -0 "$qpid" 2>/dev/null; then
		log "stopping the VM (pid $qpid)"
		kill "$qpid" 2>/dev/null || true
		wait "$qpid" 2>/dev/null || true
	fi
	rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

root=$work/root
mkdir -p "$root" "$cache"
tarball=$cache/bookworm-root.tar
if [ ! -s "$tarball" ]; then
	log "debootstrap bookworm from $mirror (first run; cached in $tarball)"
	start=$(date +%s)
	debootstrap --variant=minbase \
		--include=systemd,systemd-sysv,dbus,dbus-user-session,libpam-systemd,udev,kmod,linux-image-amd64,initramfs-tools,procps \
		bookworm "$root" "$mirror" >"$work/debootstrap.log" 2>&1 ||
		{ tail -20 "$work/debootstrap.log" >&2; die "debootstrap failed"; }
	log "debootstrap took $(($(date +%s) - start))s"
	tar -C "$root" -cf "$tarball.tmp" . && mv "$tarball.tmp" "$tarball"
else
	log "root from cache $tarball"
	tar -C "$root" -xf "$tarball"
fi
kernel=$(ls "$root"/boot/vmlinuz-* | sort | tail -1)
initrd=$(ls "$root"/boot/initrd.img-* | sort | tail -1)
[ -f "$kernel" ] && [ -f "$initrd" ] || die "no kernel/initrd in the root's /boot"

# The guest: binaries, the test script run once at boot, a user with
# lingering (so user@1000.service and its bus exist for the scope test).
install -m 0755 "$bin/fedmem-run" "$bin/fedmem" "$root/usr/local/bin/"
install -m 0755 "$here/guest.sh" "$root/usr/local/sbin/fedmem-vm-guest"
echo fedmem-vm >"$root/etc/hostname"
printf '/dev/vda / ext4 rw 0 1\n' >"$root/etc/fstab"
chroot "$root" sh -c 'id agent >/dev/null 2>&1 || useradd -m -u 1000 -s /bin/sh agent'
mkdir -p "$root/var/lib/systemd/linger" && touch "$root/var/lib/systemd/linger/agent"
cat >"$root/etc/systemd/system/fedmem-vm-guest.service" <<'EOF'
[Unit]
Description=fedmem cgroup v2 checks
After=multi-user.target user@1000.service
[Service]
Type=oneshot
ExecStart=/usr/local/sbin/fedmem-vm-guest
StandardOutput=tty
StandardError=tty
TTYPath=/dev/ttyS0
EOF
mkdir -p "$root/etc/systemd/system/multi-user.target.wants"
ln -sf ../fedmem-vm-guest.service "$root/etc/systemd/system/multi-user.target.wants/fedmem-vm-guest.service"
# No getty on the console: the guest's output is the test's.
ln -sf /dev/null "$root/etc/systemd/system/serial-getty@ttyS0.service"

img=$work/root.img
log "building $img"
cp "$kernel" "$work/vmlinuz"
cp "$initrd" "$work/initrd"
mkfs.ext4 -q -F -L fedmem-vm -d "$root" "$img" 3G
rm -rf "$root"

accel=tcg,thread=multi
[ -w /dev/kvm ] && accel=kvm
log "booting (accel $accel, timeout ${timeout}s); serial log $work/serial.log"
start=$(date +%s)
qemu-system-x86_64 -accel "$accel" -m 1536 -smp 2 -nographic -no-reboot \
	-kernel "$work/vmlinuz" -initrd "$work/initrd" \
	-append "root=/dev/vda rw console=ttyS0 quiet systemd.show_status=0 systemd.unified_cgroup_hierarchy=1 lsm=lockdown,capability,landlock,yama,apparmor panic=-1" \
	-drive "file=$img,format=raw,if=virtio" \
	-net none </dev/null >"$work/serial.log" 2>&1 &
qpid=$!
# Wait for the VM to power off (the guest does, once its checks ran), or
# for the deadline; progress lines come from the serial log.
( sleep "$timeout"; kill "$qpid" 2>/dev/null ) &
watchdog=$!
tail -n +1 -f "$work/serial.log" --pid="$qpid" | grep --line-buffered -E '^(FEDMEM-VM|\[ *[0-9.]+\] (Kernel panic|EXT4-fs error))' >&2 || true
wait "$qpid" || true
kill "$watchdog" 2>/dev/null || true
qpid=""
log "VM ran $(($(date +%s) - start))s"
pass=$(grep -c '^FEDMEM-VM: PASS' "$work/serial.log" || true)
fail=$(grep -c '^FEDMEM-VM: FAIL' "$work/serial.log" || true)
if ! grep -q '^FEDMEM-VM: DONE' "$work/serial.log"; then
	tail -40 "$work/serial.log" >&2
	die "the guest did not finish (timeout ${timeout}s, or it crashed): $pass passed, $fail failed before that"
fi
[ "$fail" = 0 ] && [ "$pass" -gt 0 ] || die "$fail check(s) failed, $pass passed"
log "PASS: all $pass checks"
