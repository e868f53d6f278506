#!/bin/bash
# Multi-host test bed: N "hosts" as network namespaces on one bridge, used by tests and
# benchmarks. Source it (functions bed_*) or run it: bed.sh up N | down | exec H CMD... |
# shape RATE DELAY | cut H | heal H | cut_pair A B | heal_pair A B | freeze H | thaw H.
#
# Layout: a "switch" namespace ${BED}sw holds bridge br0; host i is namespace ${BED}hI
# with eth0 = 10.77.0.I/24 (BED_NET overrides the first three octets), joined to the
# bridge by a veth pair (switch side named hI). Nothing is created in the caller's
# namespace, so all traffic stays inside namespaces the bed made. bed_exec enters only
# the host's network namespace (nsenter --net, not `ip netns exec`, which also makes a
# private mount namespace): a FUSE mount made in a host is visible everywhere.
#
# Link shaping (bed_shape RATE [DELAY]): tbf on both ends of every veth, so each host's
# link carries RATE each way; with a delay, netem sits above it (kernels without
# sch_netem, as some VMs, get the rate only, with a warning).
# Failures: bed_cut takes the host's switch port down: its packets go nowhere, no RST
# and no ICMP reach anyone (the host goes silent; its own sockets just retransmit).
# bed_cut_pair I J makes host J silent to host I only (a blackhole route in J). (Routes and link state, not tc filters, because many
# kernels lack the tc classifiers and actions that would do it.) bed_freeze sends
# SIGSTOP to every process in the host's namespace (the kernel still answers TCP, as
# a hung daemon's host does), bed_thaw SIGCONT.
#
# Environment: BED (name prefix, default "bed$$-"; every namespace starts with it),
# BED_NET (default 10.77.0). Needs root and iproute2 (ip, tc).

BED=${BED:-bed$$-}
BED_NET=${BED_NET:-10.77.0}
BED_N=0

bed_available() { # 0 if network namespaces can be made here
	command -v ip >/dev/null && command -v tc >/dev/null || return 1
	local t="${BED}probe"
	ip netns add "$t" 2>/dev/null || return 1
	ip netns del "$t"
}

bed_ns() { echo "${BED}h$1"; }           # namespace of host i
bed_ip() { echo "$BED_NET.$1"; }         # address of host i
bed_sw() { echo "${BED}sw"; }

bed_up() { # bed_up N: N hosts, 1..N
	local n=$1 i sw; sw=$(bed_sw)
	bed_down # leftovers of a killed run with the same prefix
	ip netns add "$sw" || return 1
	ip -n "$sw" link set lo up
	ip -n "$sw" link add br0 type bridge
	ip -n "$sw" link set br0 up
	for ((i = 1; i <= n; i++)); do
		local h; h=$(bed_ns "$i")
		ip netns add "$h" || return 1
		ip -n "$h" link set lo up
		ip link add eth0 netns "$h" type veth peer name "h$i" netns "$sw" || return 1
		ip -n "$sw" link set "h$i" master br0
		ip -n "$sw" link set "h$i" up
		ip -n "$h" addr add "$(bed_ip "$i")/24" dev eth0
		ip -n "$h" link set eth0 up
	done
	BED_N=$n
	echo "$n" >"/run/netns/.${BED}n" 2>/dev/null || true
}

bed_count() { [ "$BED_N" -gt 0 ] && echo "$BED_N" || cat "/run/netns/.${BED}n" 2>/dev/null || echo 0; }

bed_exec() { # bed_exec I CMD...: run CMD in host I
	local h; h=$(bed_ns "$1"); shift
	nsenter --net="/run/netns/$h" "$@"
}

# Command prefix that runs in host I: "$(bed_in I)" CMD... as one process (no shell in
# between), so a PID taken from `CMD &` is the command's own and can be signalled.
bed_in() { echo "nsenter --net=/run/netns/$(bed_ns "$1")"; }

bed_pids() { ip netns pids "$(bed_ns "$1")" 2>/dev/null; }

# bed_shape RATE [DELAY] (e.g. 1gbit 0.1ms): every link, both directions.
bed_shape() {
	local rate=$1 delay=${2:-} i n end dev ns; n=$(bed_count)
	for ((i = 1; i <= n; i++)); do
		for end in host sw; do
			if [ $end = host ]; then ns=$(bed_ns "$i"); dev=eth0; else ns=$(bed_sw); dev=h$i; fi
			tc -n "$ns" qdisc del dev "$dev" root 2>/dev/null
			local parent="root"
			if [ -n "$delay" ]; then
				if tc -n "$ns" qdisc add dev "$dev" root handle 1: netem delay "$delay" \
					limit 100000 2>/dev/null; then
					parent="parent 1:"
				else
					[ "$i" = 1 ] && [ $end = host ] &&
						echo "bed: no netem in this kernel: delay $delay not applied" >&2
				fi
			fi
			tc -n "$ns" qdisc add dev "$dev" $parent handle 2: tbf rate "$rate" \
				burst 256kb latency 50ms || return 1
		done
	done
}

bed_cut() { ip -n "$(bed_sw)" link set "h$1" down; }  # host I silent to everyone
bed_heal() { ip -n "$(bed_sw)" link set "h$1" up; }

bed_cut_pair() { # bed_cut_pair I J: host I hears nothing from host J
	# A blackhole route in J for I's address: J's packets to I are dropped inside J
	# (J's stack sees local send failures and retransmits), I's reach J but are never
	# answered. For I this is a silent path (no RST, no ICMP), while everyone else
	# still reaches both. (A blackhole in I as well would make I's own connects fail
	# at once with EINVAL, which no real network does.)
	ip -n "$(bed_ns "$2")" route add blackhole "$(bed_ip "$1")/32"
}

bed_heal_pair() {
	ip -n "$(bed_ns "$2")" route del blackhole "$(bed_ip "$1")/32" 2>/dev/null
	return 0
}

bed_freeze() { local p; for p in $(bed_pids "$1"); do kill -STOP "$p" 2>/dev/null; done; }
bed_thaw() { local p; for p in $(bed_pids "$1"); do kill -CONT "$p" 2>/dev/null; done; }

# Bytes host I has sent on its link (for bytes-per-byte-written accounting).
# (/proc/net is the reader's network namespace; /sys is not, under nsenter --net)
bed_tx_bytes() { bed_exec "$1" awk -F'[: ]+' '$2 == "eth0" {print $11}' /proc/net/dev; }

bed_down() { # kills every process in every host, deletes the namespaces
	local ns p
	for ns in $(ip netns list 2>/dev/null | awk '{print $1}' | grep -F "$BED"); do
		case $ns in "$BED"*) ;; *) continue ;; esac
		for p in $(ip netns pids "$ns" 2>/dev/null); do kill -CONT "$p" 2>/dev/null; kill -KILL "$p" 2>/dev/null; done
	done
	for ns in $(ip netns list 2>/dev/null | awk '{print $1}'); do
		case $ns in "$BED"*) ip netns del "$ns" 2>/dev/null ;; esac
	done
	rm -f "/run/netns/.${BED}n"
	BED_N=0
}

if [ "${BASH_SOURCE[0]}" = "$0" ]; then
	set -u
	cmd=${1:-}; shift || true
	case $cmd in
	up|down|exec|shape|cut|heal|cut_pair|heal_pair|freeze|thaw|pids|tx_bytes|available)
		"bed_$cmd" "$@" ;;
	*) echo "usage: BED=PREFIX bed.sh up N|down|exec I CMD..|shape RATE DELAY|cut I|heal I|cut_pair I J|heal_pair I J|freeze I|thaw I" >&2
	   exit 2 ;;
	esac
fi
