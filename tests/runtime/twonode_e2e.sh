#!/usr/bin/env bash
# Two "nodes" on one machine (docs/runtime.md, "Shared output folder"; docs/reliability.md):
# two network namespaces with their own host names (nodeA, nodeB), joined by a veth pair with
# private addresses 10.213.0.1/24 and 10.213.0.2/24. mpirun runs in nodeA and starts nodeB's
# daemon through a launcher agent (the `ssh` of Open MPI) that enters nodeB's namespace; the
# ranks talk over TCP on the veth only (btl self,tcp: no shared memory between the nodes).
#   1. an uninterrupted 2 x 2 run: each node's ranks have local ranks 0 and 1 and take cuda:0 and
#      cuda:1 (the synthetic model accepts a cuda binding without a GPU); the shared-folder
#      check passes and leaves no token behind;
#   2. nodeB's ranks see a node-local folder (a tmpfs over output.dir in a private mount
#      namespace): the job stops before any work, exit 2, naming ranks 2 and 3 and nodeB;
#   3. rank 3 (on nodeB) SIGKILLs itself after 2 completions; the job is rerun on nodeA only
#      and its results equal the uninterrupted run's (omni-dp-compare), no request twice.
# Needs root and `ip netns`: without them it skips (exit 77), except under CI=true, where it
# fails. Every mpirun is bounded by `timeout`; the namespaces go away at exit, whatever happened.
# usage: twonode_e2e.sh BATCH COMPARE CONFIG WORKDIR
set -euo pipefail
BATCH=$1 COMPARE=$2 CONFIG=$3 WORK=$4
MPIRUN=$(command -v mpirun || true)

skip() {
  if [[ "${CI:-}" == "true" ]]; then
    echo "FAIL (CI=true, so no skip): $*" >&2
    exit 1
  fi
  echo "SKIP: $*"
  exit 77
}
fail() {
  echo "FAIL: $*" >&2
  for f in "$WORK"/*.log; do [[ -f $f ]] && { echo "--- $f" >&2; tail -n 30 "$f" >&2; }; done
  exit 1
}

[[ $EUID -eq 0 ]] || skip "needs root (network namespaces)"
for tool in ip unshare timeout h5dump; do
  command -v "$tool" >/dev/null 2>&1 || skip "$tool is not installed"
done
[[ -n "$MPIRUN" ]] || skip "mpirun is not installed"

rm -rf "$WORK" && mkdir -p "$WORK"
WORK=$(cd "$WORK" && pwd)
id=$$
NS_A=omnidp-a-$id NS_B=omnidp-b-$id VETH_A=oda$id VETH_B=odb$id
ADDR_A=10.213.0.1 ADDR_B=10.213.0.2 NET=10.213.0.0/24

cleanup() {
  local ns pid
  for ns in "$NS_A" "$NS_B"; do
    # Whatever a timed-out run left in our namespaces (nodeB's daemon and ranks).
    for pid in $(ip netns pids "$ns" 2>/dev/null); do kill -9 "$pid" 2>/dev/null || true; done
    ip netns del "$ns" 2>/dev/null || true  # takes its end of the veth pair with it
  done
  ip link del "$VETH_A" 2>/dev/null || true
}
trap cleanup EXIT
trap 'exit 1' INT TERM HUP  # so that the EXIT trap runs

ip netns add "$NS_A" 2>"$WORK/netns.err" || skip "ip netns add failed: $(cat "$WORK/netns.err")"
ip netns add "$NS_B"
ip link add "$VETH_A" type veth peer name "$VETH_B"
ip link set "$VETH_A" netns "$NS_A"
ip link set "$VETH_B" netns "$NS_B"
ip -n "$NS_A" addr add "$ADDR_A/24" dev "$VETH_A"
ip -n "$NS_B" addr add "$ADDR_B/24" dev "$VETH_B"
for ns in "$NS_A" "$NS_B"; do ip -n "$ns" link set lo up; done
ip -n "$NS_A" link set "$VETH_A" up
ip -n "$NS_B" link set "$VETH_B" up

# The launcher agent: `agent.sh HOST COMMAND...`, like ssh. nodeB's processes get their own host
# name and, when TWONODE_B_LOCAL names a folder, a private tmpfs over it (a node-local folder).
cat >"$WORK/agent.sh" <<AGENT
#!/bin/sh
host=\$1
shift
case "\$host" in
  $ADDR_A) ns=$NS_A name=nodeA ;;
  $ADDR_B) ns=$NS_B name=nodeB ;;
  *) echo "agent.sh: unknown host \$host" >&2; exit 255 ;;
esac
if [ "\$name" = nodeB ] && [ -n "\${TWONODE_B_LOCAL:-}" ]; then
  exec ip netns exec "\$ns" unshare --uts --mount --propagation private sh -c \
    "hostname \$name && mount -t tmpfs omnidp-local '\$TWONODE_B_LOCAL' && \$*"
fi
exec ip netns exec "\$ns" unshare --uts sh -c "hostname \$name && \$*"
AGENT
chmod +x "$WORK/agent.sh"

# rows FILE: rows of FILE's /requests table; attr FILE NAME: a string attribute of its root.
rows() { h5dump -H -d /requests "$1" | sed -n 's/.*DATASPACE  SIMPLE { ( \([0-9]*\) ).*/\1/p'; }
attr() { h5dump -a "/$2" "$1" | sed -n 's/^ *(0): "\(.*\)"$/\1/p'; }
rank_rows() {
  local total=0 f
  for f in "$1"/rank-*.h5; do total=$((total + $(rows "$f"))); done
  echo "$total"
}
compare_ok() {
  "$COMPARE" "$1" "$2" >"$WORK/compare.out" 2>&1 || { cat "$WORK/compare.out" >&2; fail "omni-dp-compare $1 $2"; }
}

# run HOSTS NP OUTPUT [--set ...]: omni-dp-batch under mpirun started in nodeA (bounded), output
# appended to OUTPUT.log; prints the exit code.
run() {
  local hosts=$1 np=$2 out=$3 rc=0
  shift 3
  echo "=== mpirun --host $hosts -np $np omni-dp-batch --output $out $*" >>"$out.log"
  timeout -k 5 60 ip netns exec "$NS_A" unshare --uts sh -c 'hostname nodeA && exec "$@"' sh \
    "$MPIRUN" --host "$hosts" -np "$np" --oversubscribe --bind-to none \
    --mca plm_rsh_agent "$WORK/agent.sh" --mca btl self,tcp \
    --mca btl_tcp_if_include "$NET" --mca oob_tcp_if_include "$NET" \
    "$BATCH" --config "$CONFIG" --output "$out" --set model.device=cuda \
    --set synthetic.seconds_per_gcost=100 "$@" >>"$out.log" 2>&1 || rc=$?
  echo "=== exit $rc" >>"$out.log"
  echo "$rc"
}
TWO="$ADDR_A:2,$ADDR_B:2"

# 1. Uninterrupted, 2 nodes x 2 ranks.
rc=$(run "$TWO" 4 "$WORK/full")
[[ $rc == 0 ]] || fail "uninterrupted run: exit $rc"
requests=$(rows "$WORK/full/results.h5")
[[ "$requests" -ge 8 ]] || fail "the manifest is too small for this test ($requests)"
expected=("0 nodeA cuda:0" "1 nodeA cuda:1" "2 nodeB cuda:0" "3 nodeB cuda:1")
for r in 0 1 2 3; do
  f="$WORK/full/rank-0000$r.h5"
  [[ -f "$f" ]] || fail "no rank file of rank $r"
  device=$(attr "$f" device)
  got="$r $(attr "$f" host) ${device%% (*}"  # "cuda:0 (NVIDIA H200)" where a GPU is named
  [[ "$got" == "${expected[$r]}" ]] || fail "rank $r: host/device '$got', expected '${expected[$r]}'"
done
if compgen -G "$WORK/full/.omnidp-shared-*" >/dev/null; then fail "the shared-folder token was left behind"; fi
echo "2 x 2 ranks: local ranks and devices per node as expected; $requests requests"

# 2. nodeB sees a node-local output folder.
mkdir -p "$WORK/local"
rc=$(TWONODE_B_LOCAL="$WORK/local" run "$TWO" 4 "$WORK/local")
[[ $rc == 2 ]] || fail "node-local output folder: exit $rc, expected 2"
for r in 2 3; do
  grep -qF "rank $r on host nodeB does not see the token file '$WORK/local/.omnidp-shared-" \
    "$WORK/local.log" || fail "the error does not name rank $r on nodeB"
done
grep -qF "omni-dp-batch: error: output.dir: the output folder '$WORK/local' is not shared by every rank: " \
  "$WORK/local.log" || fail "the error does not name the folder"
grep -qF "output.dir must be on a file system shared by all nodes" "$WORK/local.log" ||
  fail "the error gives no hint"
if grep -qE "rank [01] on host [^ ]+ does not see" "$WORK/local.log"; then fail "the error names a rank of nodeA"; fi
[[ -z "$(ls -A "$WORK/local")" ]] || fail "the stopped job left files: $(ls -A "$WORK/local")"
echo "node-local folder on nodeB: exit 2, ranks 2 and 3 named"

# 3. Rank 3 (nodeB) is killed after 2 completions; the rerun on nodeA alone finishes the rest.
rc=$(run "$TWO" 4 "$WORK/kill" --set scheduler.policy=round_robin --set faults.kill_rank=3 \
  --set faults.kill_after=2)
# mpirun exits 137 (128 + SIGKILL) for a killed rank; 124 would be the timeout.
[[ $rc != 0 && $rc != 75 && $rc != 124 ]] || fail "killed run: exit $rc"
grep -q "rank 3 kills itself after 2 completions" "$WORK/kill.log" || fail "rank 3 was not killed"
grep -q "process rank 3 with PID [0-9]* on node $ADDR_B exited on signal 9" "$WORK/kill.log" ||
  fail "mpirun did not end the job on rank 3's death"
[[ -f "$WORK/kill/rank-00003.h5" && "$(rows "$WORK/kill/rank-00003.h5")" -ge 2 ]] ||
  fail "nodeB's rank 3 left no durable rows"
[[ ! -f "$WORK/kill/results.h5" ]] || fail "the killed run wrote results.h5"
rc=$(run "$ADDR_A:2" 2 "$WORK/kill")
[[ $rc == 0 ]] || fail "resumed run on nodeA: exit $rc"
[[ "$(rows "$WORK/kill/results.h5")" == "$requests" ]] || fail "kill: merged row count"
[[ "$(rank_rows "$WORK/kill")" == "$requests" ]] || fail "kill: a request was generated twice"
compare_ok "$WORK/full/results.h5" "$WORK/kill/results.h5"
compare_ok "$WORK/kill/results.h5" "$WORK/full/results.h5"
echo "rank 3 on nodeB killed, resumed on nodeA: equal to the uninterrupted run"
