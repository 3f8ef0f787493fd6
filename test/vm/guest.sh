#!/bin/sh
# Runs once at boot inside the test VM (cgroup v2 only). Every check prints
# one "FEDMEM-VM: PASS|FAIL <name>: <why>" line on the serial console; the
# host's test/vm/run.sh counts them. Powers the VM off at the end.
set -u
export PATH=/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
pass() { echo "FEDMEM-VM: PASS $1: $2"; }
fail() { echo "FEDMEM-VM: FAIL $1: $2"; }
report() { tr -d '\n' <"$1"; }

echo "FEDMEM-VM: START kernel $(uname -r), /sys/fs/cgroup is $(stat -f -c %T /sys/fs/cgroup), controllers: $(cat /sys/fs/cgroup/cgroup.controllers)"
if [ "$(stat -f -c %T /sys/fs/cgroup)" = cgroup2fs ] && [ ! -d /sys/fs/cgroup/pids/ ] ; then
	pass v2-only "/sys/fs/cgroup is cgroup2 and no v1 hierarchy is mounted"
else
	fail v2-only "not a cgroup-v2-only boot"
fi

t=/root/t
mkdir -p $t/wd
fedmem init $t/vault >$t/init.log 2>&1 || { fail init "fedmem init: $(tail -3 $t/init.log)"; }
export FEDMEM_VAULT=$t/vault
cat >$t/lim.yaml <<'EOF'
name: vmlim
extends: ci
limits:
  pids: 32
  memory: 64MiB
  cpu: 0.5
EOF

# 1. The built-in ci profile as root: exits 0 with its pids limit on v2.
cd $t/wd
fedmem-run --profile ci --report $t/r1.json -- /bin/true >$t/o1 2>&1
rc=$?
if [ $rc = 0 ] && grep -q 'pids=4096 (cgroup v2 pids.max' $t/r1.json; then
	pass ci-true "fedmem-run --profile ci -- /bin/true exits 0, pids.max on cgroup v2"
else
	fail ci-true "rc=$rc $(tail -3 $t/o1) $(report $t/r1.json 2>/dev/null | head -c 600)"
fi

# 2. Born in the cgroup (CLONE_INTO_CGROUP + cgroup namespace): the agent
# sees itself at the root of its cgroup namespace; the session cgroup (read
# through the host's cgroupfs, visible read-only) holds the profile's limits.
fedmem-run --profile $t/lim.yaml --report $t/r2.json -- /bin/sh -c 'cat /proc/self/cgroup; cd /sys/fs/cgroup/fedmem.slice/fedmem-* && cat pids.max memory.max memory.swap.max cpu.max' >$t/o2 2>&1
rc=$?
if [ $rc = 0 ] && [ "$(tr '\n' ' ' <$t/o2)" = "0::/ 32 67108864 0 50000 100000 " ]; then
	pass in-cgroup "agent sees 0::/ and pids.max 32, memory.max 64MiB, swap 0, cpu.max 50000/100000"
else
	fail in-cgroup "rc=$rc: $(tr '\n' ' ' <$t/o2)"
fi
if grep -q 'cpu=0.5 (cgroup v2 cpu.max' $t/r2.json && grep -q 'memory=67108864 (cgroup v2 memory.max' $t/r2.json; then
	pass notes "layers.limits names cgroup v2 memory.max and cpu.max"
else
	fail notes "$(report $t/r2.json | head -c 800)"
fi

# 3. Fork bomb under pids: 32.
fedmem-run --profile $t/lim.yaml --report $t/r3.json -- /bin/sh -c 'i=0; while [ $i -lt 200 ]; do sleep 3 & i=$((i+1)); done; wait' >$t/o3 2>&1
rc=$?
if report $t/r3.json | grep -Eq '"limits_hit": *\[[^]]*"pids"'; then
	pass fork-bomb "rc=$rc, limits_hit names pids (pids.events max)"
else
	fail fork-bomb "rc=$rc $(report $t/r3.json | head -c 800)"
fi

# 4. Memory hog under memory: 64MiB (tail -n 1 keeps a newline-free line whole).
fedmem-run --profile $t/lim.yaml --report $t/r4.json -- /bin/sh -c 'head -c 400000000 /dev/zero | tail -n 1 >/dev/null' >$t/o4 2>&1
rc=$?
if report $t/r4.json | grep -Eq '"limits_hit": *\[[^]]*"memory"' && [ $rc != 0 ]; then
	pass memory-hog "rc=$rc, limits_hit names memory (memory.events oom_kill)"
else
	fail memory-hog "rc=$rc $(tail -3 $t/o4) $(report $t/r4.json | head -c 800)"
fi

# 5. Nothing left behind.
left=$(ls -d /sys/fs/cgroup/fedmem.slice/fedmem-* 2>/dev/null | wc -l)
if [ -d /sys/fs/cgroup/fedmem.slice ] && [ "$left" = 0 ]; then
	pass cleanup "no session cgroup left under /sys/fs/cgroup/fedmem.slice"
else
	fail cleanup "$left session cgroups left: $(ls /sys/fs/cgroup/fedmem.slice 2>&1 | head -5)"
fi

# 6. An unprivileged caller: a delegated systemd user scope (pids and
# memory: what systemd delegates to user@.service on every version).
systemctl start user@1000.service
u=/home/agent/t
runuser -u agent -- sh -c "mkdir -p $u/wd && fedmem init $u/vault" >$t/uinit.log 2>&1
printf 'name: vmuser\nextends: ci\nlimits:\n  pids: 32\n  memory: 64MiB\n' >/home/agent/lim.yaml
chown agent /home/agent/lim.yaml
echo "FEDMEM-VM: INFO user@1000 delegates: $(cat /sys/fs/cgroup/user.slice/user-1000.slice/user@1000.service/cgroup.controllers)"
asagent() {
	runuser -u agent -- env XDG_RUNTIME_DIR=/run/user/1000 DBUS_SESSION_BUS_ADDRESS=unix:path=/run/user/1000/bus FEDMEM_VAULT=$u/vault sh -c "cd $u/wd && $*"
}
asagent "fedmem-run --profile /home/agent/lim.yaml --report $u/r6.json -- /bin/sh -c 'i=0; while [ \$i -lt 200 ]; do sleep 3 & i=\$((i+1)); done; wait'" >$t/o6 2>&1
rc=$?
if grep -q 'systemd user scope' $u/r6.json && report $u/r6.json | grep -Eq '"limits_hit": *\[[^]]*"pids"'; then
	pass user-scope "uid 1000: limits in a delegated systemd user scope, fork bomb hit pids (rc=$rc)"
else
	fail user-scope "rc=$rc $(tail -3 $t/o6) $(report $u/r6.json 2>/dev/null | head -c 800)"
fi
asagent "fedmem-run --profile /home/agent/lim.yaml --report $u/r7.json -- /bin/sh -c 'head -c 400000000 /dev/zero | tail -n 1 >/dev/null'" >$t/o7 2>&1
rc=$?
if report $u/r7.json | grep -Eq '"limits_hit": *\[[^]]*"memory"'; then
	pass user-memory "uid 1000: memory hog hit memory (rc=$rc)"
else
	fail user-memory "rc=$rc $(tail -3 $t/o7) $(report $u/r7.json 2>/dev/null | head -c 800)"
fi
scopes=$(ls -d /sys/fs/cgroup/user.slice/user-1000.slice/user@1000.service/app.slice/fedmem-* /sys/fs/cgroup/user.slice/user-1000.slice/user@1000.service/fedmem-* 2>/dev/null | wc -l)
[ "$scopes" = 0 ] && pass user-cleanup "no fedmem scope left" || fail user-cleanup "$scopes scope(s) left"

# 7. Without a systemd user bus: refused with the reason (memory is strict here).
runuser -u agent -- env -u XDG_RUNTIME_DIR FEDMEM_VAULT=$u/vault sh -c "cd $u/wd && fedmem-run --profile /home/agent/lim.yaml -- /bin/true" >$t/o8 2>&1
rc=$?
if [ $rc = 125 ] && grep -q 'delegated systemd user scope' $t/o8 && grep -q XDG_RUNTIME_DIR $t/o8; then
	pass no-systemd "refused (125): $(tail -1 $t/o8 | head -c 300)"
else
	fail no-systemd "rc=$rc $(tail -3 $t/o8)"
fi

# 8. doctor / --probe tell the truth here.
fedmem-run --probe >$t/probe 2>&1
if grep -q 'cgroup pids .*v2 enforce=true' $t/probe && grep -q 'cgroup memory .*v2 enforce=true' $t/probe; then
	pass probe-root "$(grep '^cgroup ' $t/probe | tr '\n' ';' | head -c 400)"
else
	fail probe-root "$(grep '^cgroup' $t/probe | tr '\n' ';')"
fi
runuser -u agent -- env -u XDG_RUNTIME_DIR fedmem-run --probe >$t/probe2 2>&1
if grep -q 'cgroup pids .*v2 enforce=false.*XDG_RUNTIME_DIR' $t/probe2; then
	pass probe-user "without a user bus: $(grep '^cgroup pids' $t/probe2 | head -c 300)"
else
	fail probe-user "$(grep '^cgroup' $t/probe2 | tr '\n' ';')"
fi
echo "FEDMEM-VM: DONE"
sync
systemctl poweroff --no-block
