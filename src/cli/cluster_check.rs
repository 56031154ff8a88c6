//! `haloscope cluster-check` (hidden): every collective of the process group with known inputs,
//! each rank checking the exact results, so `mpirun -n K haloscope cluster-check` proves the
//! MPI wiring (tests/mpi_cluster.rs) without any data file.

use crate::cluster::Collective;
use anyhow::bail;
use clap::Args;

/// `haloscope cluster-check` options.
#[derive(Debug, Args)]
pub struct ClusterCheckArgs {
    /// Panic on this rank after the first collective, while the others go on to the next:
    /// proves that a panic ends the whole job (no rank left waiting).
    #[arg(long)]
    pub panic_on_rank: Option<usize>,
}

/// Runs every collective once and checks each answer on this rank; prints one line per rank.
pub fn run(group: &dyn Collective, args: &ClusterCheckArgs) -> anyhow::Result<()> {
    let (r, k) = (group.rank(), group.size());
    let mut wrong = Vec::new();
    let mut check = |what: &str, ok: bool| {
        if !ok {
            wrong.push(what.to_owned());
        }
    };
    check(
        "local rank below local size",
        group.local_rank() < group.local_size(),
    );
    check("local size at most size", group.local_size() <= k);
    group.barrier();
    if args.panic_on_rank == Some(r) {
        panic!("rank {r} panics as --panic-on-rank asks");
    }

    let ri = r as i64;
    let ki = k as i64;
    let mut ints = [ri, -3 * ri, (1_i64 << 40) + ri];
    group.sum_i64(&mut ints);
    let tri = ki * (ki - 1) / 2;
    check("sum_i64", ints == [tri, -3 * tri, (1_i64 << 40) * ki + tri]);

    let mut counts = [r as u64 + 1, u64::MAX / 8];
    group.sum_u64(&mut counts);
    let ku = k as u64;
    check(
        "sum_u64",
        counts == [ku * (ku + 1) / 2, (u64::MAX / 8) * ku],
    );

    let mut low = [r as f64 + 0.5, -(r as f64), f64::MAX];
    group.min_f64(&mut low);
    check("min_f64", low == [0.5, -(k as f64 - 1.0), f64::MAX]);
    let mut high = [r as f64 + 0.5, -(r as f64), f64::MIN];
    group.max_f64(&mut high);
    check("max_f64", high == [k as f64 - 0.5, 0.0, f64::MIN]);

    // Rank q sends q bytes of value q (rank 0 sends nothing): variable lengths, one empty.
    let own = |q: usize| vec![q as u8; q];
    let everyone: Vec<Vec<u8>> = (0..k).map(own).collect();
    check(
        "all_gather_bytes",
        group.all_gather_bytes(&own(r)) == everyone,
    );

    let root = k - 1;
    let gathered = group.gather_bytes(root, &own(r));
    let expected = if r == root { everyone } else { Vec::new() };
    check("gather_bytes", gathered == expected);

    let mut message = if r == root {
        b"from the last rank".to_vec()
    } else {
        vec![7; r * 3]
    };
    group.broadcast_bytes(root, &mut message);
    check("broadcast_bytes", message == b"from the last rank");

    // From rank q to rank d: (q + d) % 3 bytes of value 10q + d.
    let piece = |q: usize, d: usize| vec![(10 * q + d) as u8; (q + d) % 3];
    let outgoing: Vec<Vec<u8>> = (0..k).map(|d| piece(r, d)).collect();
    let incoming: Vec<Vec<u8>> = (0..k).map(|q| piece(q, r)).collect();
    check(
        "all_to_all_bytes",
        group.all_to_all_bytes(&outgoing) == incoming,
    );
    // The same messages packed in one buffer each way.
    let send_counts: Vec<usize> = outgoing.iter().map(Vec::len).collect();
    let recv_counts: Vec<usize> = incoming.iter().map(Vec::len).collect();
    let mut packed = vec![0u8; recv_counts.iter().sum()];
    group.all_to_all_into(&outgoing.concat(), &send_counts, &mut packed, &recv_counts);
    check("all_to_all_into", packed == incoming.concat());

    check("any_failed(last rank)", group.any_failed(r == root));
    check("any_failed(none)", !group.any_failed(false));
    group.barrier();
    if !wrong.is_empty() {
        bail!("rank {r} of {k}: wrong results from {}", wrong.join(", "));
    }
    println!("rank {r} of {k}: every collective exact");
    Ok(())
}
