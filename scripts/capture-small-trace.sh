#!/usr/bin/env bash
# Capture a small real vmscan trace on this machine (root, Linux 6.x, tracefs).
# Two phases: (1) a 1 GiB file stream-read inside a 96 MiB cgroup-v1 memory cgroup
# (memcg reclaim), (2) free memory squeezed with hugetlb pages while a 3 GiB file is
# read (kswapd + direct global reclaim). Saves and restores every tracing knob it
# touches, removes the cgroup, the files and the hugetlb reservation.
# Usage: scripts/capture-small-trace.sh OUTDIR
set -euo pipefail
OUT=${1:?outdir}; mkdir -p "$OUT"
T=/sys/kernel/tracing
MOUNTED_HERE=0
if [ ! -e $T/trace ]; then mount -t tracefs nodev $T; MOUNTED_HERE=1; fi
WORK=$(mktemp -d /var/tmp/rltrace.XXXXXX)
CG=/sys/fs/cgroup/memory/rltrace.$$
# Saved state
S_ON=$(cat $T/tracing_on); S_TRACER=$(cat $T/current_tracer)
S_BUF=$(cat $T/buffer_size_kb | awk '{print $1}'); S_EVENTS=$(cat $T/set_event)
S_HUGE=$(cat /proc/sys/vm/nr_hugepages)
restore() {
  set +e
  echo 0 > $T/tracing_on
  echo > $T/set_event
  for e in $S_EVENTS; do echo "$e" >> $T/set_event; done
  echo "$S_BUF" > $T/buffer_size_kb
  echo "$S_TRACER" > $T/current_tracer
  echo > $T/trace
  echo "$S_ON" > $T/tracing_on
  echo "$S_HUGE" > /proc/sys/vm/nr_hugepages
  if [ -d "$CG" ]; then
    for p in $(cat $CG/cgroup.procs); do echo "$p" > /sys/fs/cgroup/memory/cgroup.procs; done
    rmdir "$CG"
  fi
  rm -rf "$WORK"
  [ -n "${PIPE_PID:-}" ] && kill "$PIPE_PID" 2>/dev/null
  if [ $MOUNTED_HERE = 1 ]; then umount $T; fi
}
trap restore EXIT
# Files first (not traced), and their page cache dropped.
dd if=/dev/zero of=$WORK/f1 bs=1M count=1024 status=none
dd if=/dev/zero of=$WORK/f2 bs=1M count=3072 status=none
sync
dd if=$WORK/f1 iflag=nocache count=0 status=none
dd if=$WORK/f2 iflag=nocache count=0 status=none
echo 0 > $T/tracing_on
echo > $T/trace
echo 4096 > $T/buffer_size_kb
echo nop > $T/current_tracer
echo > $T/set_event
for e in vmscan:* compaction:mm_compaction_begin compaction:mm_compaction_end \
         compaction:mm_compaction_try_to_compact_pages compaction:mm_compaction_deferred; do
  echo "$e" >> $T/set_event
done
cat $T/trace_pipe > "$OUT/trace.txt" & PIPE_PID=$!
cp /proc/vmstat "$OUT/vmstat.before"
echo 1 > $T/tracing_on
# Phase 1: memcg reclaim.
mkdir "$CG"; echo $((96<<20)) > $CG/memory.limit_in_bytes
bash -c "echo \$\$ > $CG/cgroup.procs; exec dd if=$WORK/f1 of=/dev/null bs=1M status=none"
# Phase 2: global reclaim. Leave ~1.2 GiB (plus reclaimable cache) outside hugetlb.
FREE_KB=$(awk '/MemAvailable/ {print $2}' /proc/meminfo)
echo $(( (FREE_KB - 1200*1024) / 2048 )) > /proc/sys/vm/nr_hugepages
dd if=$WORK/f2 of=/dev/null bs=1M status=none
echo "$S_HUGE" > /proc/sys/vm/nr_hugepages
echo 0 > $T/tracing_on
cp /proc/vmstat "$OUT/vmstat.after"
sleep 1; kill $PIPE_PID; wait $PIPE_PID 2>/dev/null || true; PIPE_PID=
# trace_pipe is consumed; a final read of "trace" catches nothing more.
ls -la "$OUT"
