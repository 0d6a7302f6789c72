#!/usr/bin/env bash
# Two hosts on one machine: scripts/mpirun.sh across two network namespaces
# joined by a veth pair, Open MPI over TCP between them. Each namespace is
# a host of its own (its own address and hostname, "ordo-host-a" and
# "ordo-host-b"); they share the filesystem. The processes are split evenly,
# the first half on host a:
#
#   scripts/two-hosts.sh -np 4 -x ORDO_NUM_DEVICES=2 build/bitwise_layout out
#
# The arguments go to scripts/mpirun.sh (so to mpirun) after the options
# that make the namespaces hosts:
# - mpirun runs inside host a (then a's address is local, and its daemon's
#   address reachable from b); it starts b's daemon through an agent script
#   that enters b's namespace, as ssh would enter a host (and shell-parses
#   the command as ssh does), never through ssh (plm_rsh_no_tree_spawn);
# - MPI and Open MPI's own traffic stay on the pair's addresses
#   (btl_tcp_if_include and oob_tcp_if_include as a CIDR: the interface
#   names differ per namespace). Open MPI gives the processes these
#   settings as OMPI_MCA_btl_tcp_if_include / OMPI_MCA_oob_tcp_if_include:
#   what a process should bind its own sockets to, to stay on the link.
#
# Namespaces, veth and addresses are this run's own (named after its pid)
# and removed on exit, whatever happens. Needs root (CAP_NET_ADMIN and
# CAP_SYS_ADMIN): otherwise it says "skipped: ..." and exits 77 (ctest's
# SKIP_RETURN_CODE).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"

skip() {
  echo "skipped: two hosts need network namespaces: $*" >&2
  exit 77
}
[ "$(id -u)" -eq 0 ] || skip "not root (ip netns add needs CAP_NET_ADMIN and CAP_SYS_ADMIN)"
command -v ip >/dev/null || skip "no ip command (apt-get install iproute2)"
command -v unshare >/dev/null || skip "no unshare command (apt-get install util-linux)"

# The number of processes (mpirun's -np, -n or --np), to put half of them
# on each host.
processes=1
args=("$@")
for ((i = 0; i + 1 < ${#args[@]}; ++i)); do
  case ${args[i]} in
    -np | -n | --np) [[ ${args[i + 1]} =~ ^[0-9]+$ ]] && processes=${args[i + 1]} ;;
  esac
done
slots=$(((processes + 1) / 2))

id=$$
ns_a=ordo-$id-a ns_b=ordo-$id-b
veth_a=ov$id-a veth_b=ov$id-b  # at most 15 characters: pids have at most 7 digits
subnet=10.213.$((id % 250 + 1))
address_a=$subnet.1 address_b=$subnet.2 cidr=$subnet.0/24
work=$(mktemp -d)

cleanup() {
  local ns pid
  for ns in "$ns_a" "$ns_b"; do
    # Daemons of this run left in the namespace (after a kill, say).
    for pid in $(ip netns pids "$ns" 2>/dev/null); do kill -9 "$pid" 2>/dev/null || true; done
    ip netns del "$ns" 2>/dev/null || true  # the veth pair goes with its ends
  done
  rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

ip netns add "$ns_a" 2>"$work/error" || skip "ip netns add failed: $(cat "$work/error")"
# Entering one remounts /sys, which a chroot without its own mount of /
# refuses ("mount --make-rslave /" failed).
ip netns exec "$ns_a" true 2>"$work/error" || skip "ip netns exec failed: $(cat "$work/error")"
ip netns add "$ns_b"
ip link add "$veth_a" type veth peer name "$veth_b"
ip link set "$veth_a" netns "$ns_a"
ip link set "$veth_b" netns "$ns_b"
ip -n "$ns_a" addr add "$address_a/24" dev "$veth_a"
ip -n "$ns_b" addr add "$address_b/24" dev "$veth_b"
for end in "$ns_a:$veth_a" "$ns_b:$veth_b"; do
  ip -n "${end%%:*}" link set lo up
  ip -n "${end%%:*}" link set "${end#*:}" up
done

# mpirun calls: agent <host> <the daemon's command words...>.
cat >"$work/agent" <<EOF
#!/bin/sh
host=\$1
shift
case \$host in
  $address_a) ns=$ns_a name=ordo-host-a ;;
  $address_b) ns=$ns_b name=ordo-host-b ;;
  *) echo "two-hosts agent: no host \$host" >&2; exit 255 ;;
esac
exec ip netns exec "\$ns" unshare --uts sh -c "hostname \$name; \$*"
EOF
chmod +x "$work/agent"
printf '%s slots=%d\n%s slots=%d\n' "$address_a" "$slots" "$address_b" "$slots" >"$work/hosts"

# Not exec: the trap removes the namespaces when mpirun is done.
status=0
ip netns exec "$ns_a" unshare --uts sh -c 'hostname ordo-host-a; exec "$@"' sh \
  "$root/scripts/mpirun.sh" --hostfile "$work/hosts" \
  --mca plm_rsh_agent "$work/agent" --mca plm_rsh_no_tree_spawn 1 \
  --mca btl tcp,vader,self --mca btl_tcp_if_include "$cidr" --mca oob_tcp_if_include "$cidr" \
  "$@" || status=$?
exit $status
