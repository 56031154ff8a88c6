#!/usr/bin/env bash
# Which of Open MPI's paths moves big messages fastest between 2 ranks of this host: runs
# scripts/bench/mpi-bandwidth.c (built with mpicc) under each setting of TRANSPORTS and prints
# one line per setting, then `best NAME` (the highest MPI_Alltoallv rate, the collective that
# moves the particles). Open MPI must be on PATH (source scripts/bench/mpi-env.sh first).
#
#   scripts/bench/mpi-transport.sh PROBE [MIB_PER_RANK] [REPEATS]
#
# Source it to get `transport_args NAME` (the mpirun arguments of a setting) without running.
#
# vader: shared memory by plain copies (mpi-env.sh's default: the sandbox refuses CMA);
# vader-256k / vader-1m: the same with larger fragments (max_send_size) in a larger segment;
# tcp: loopback TCP only; tcp-4: four TCP links per peer; ucx-posix / ucx-sysv: the UCX PML
# over its own shared-memory transports.
transport_args() {
    local copies=(--mca btl self,vader,tcp --mca btl_vader_single_copy_mechanism none)
    case $1 in
        vader) echo "${copies[@]}" ;;
        vader-256k) echo "${copies[@]}" --mca btl_vader_max_send_size 262144 \
            --mca btl_vader_segment_size 33554432 ;;
        vader-1m) echo "${copies[@]}" --mca btl_vader_max_send_size 1048576 \
            --mca btl_vader_segment_size 134217728 ;;
        tcp) echo --mca btl self,tcp ;;
        tcp-4) echo --mca btl self,tcp --mca btl_tcp_links 4 ;;
        ucx-posix) echo --mca pml ucx -x UCX_TLS=posix,self ;;
        ucx-sysv) echo --mca pml ucx -x UCX_TLS=sysv,self ;;
        *) return 1 ;;
    esac
}

if [ "${BASH_SOURCE[0]}" = "$0" ]; then
    probe=${1:?usage: mpi-transport.sh PROBE [MIB_PER_RANK] [REPEATS]}
    mib=${2:-256}; repeats=${3:-2}
    best=vader best_rate=0
    for name in ${TRANSPORTS:-vader vader-256k vader-1m tcp tcp-4 ucx-posix ucx-sysv}; do
        # shellcheck disable=SC2046
        line=$(timeout "${PROBE_LIMIT:-40}" mpirun --allow-run-as-root --bind-to none -n 2 \
            $(transport_args "$name") "$probe" "$mib" "$repeats" 2>&1 | grep -E '^ranks|WRONG' | tail -1)
        echo "$name: ${line:-failed}"
        rate=$(echo "$line" | grep -v WRONG | sed -n 's/.*alltoallv \([0-9.]*\) GB\/s.*/\1/p')
        if [ -n "$rate" ] && python3 -c "import sys; sys.exit(not float(sys.argv[1]) > float(sys.argv[2]))" "$rate" "$best_rate"; then
            best=$name best_rate=$rate
        fi
    done
    echo "best $best"
fi
