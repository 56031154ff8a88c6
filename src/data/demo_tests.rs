use super::*;

#[test]
fn snapshot_has_the_requested_size_and_families() {
    let s = demo_snapshot(10_000, 7);
    assert_eq!(s.n_particles(), 10_000);
    let counts: Vec<(SpeciesKind, usize)> = s.species.iter().map(|x| (x.kind, x.len())).collect();
    assert_eq!(
        counts,
        [
            (SpeciesKind::Gas, 4_000),
            (SpeciesKind::Dark, 5_000),
            (SpeciesKind::Star, 1_000)
        ]
    );
    assert!(s.header.periodic);
    assert_eq!(s.header.box_size, Some(1.0));
    let gas = s.species(SpeciesKind::Gas).expect("gas");
    let h = gas.smoothing_lengths.as_ref().expect("smoothing lengths");
    assert!(h.iter().all(|&x| x > 0.0 && x <= 0.1));
    let rho = &gas.field("Density").expect("Density").values;
    let temp = &gas.field("Temperature").expect("Temperature").values;
    assert!(rho.iter().all(|&x| x >= 0.19 && x.is_finite()));
    assert!(temp.iter().all(|&x| (100.0..=1e8).contains(&x)));
    for sp in &s.species {
        assert!(
            sp.positions
                .iter()
                .flatten()
                .all(|&x| (0.0..1.0).contains(&x))
        );
    }
}

#[test]
fn same_seed_same_snapshot_whatever_the_thread_count() {
    let many = demo_snapshot(20_000, 3);
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(1)
        .build()
        .expect("pool");
    let one = pool.install(|| demo_snapshot(20_000, 3));
    assert_eq!(many, one);
    assert_ne!(
        many.species[0].positions,
        demo_snapshot(20_000, 4).species[0].positions
    );
}

/// Variance over mean of counts in 16³ cells: 1 for a Poisson (unclustered) field.
fn count_in_cells_ratio(positions: &[[f32; 3]]) -> f64 {
    let mut cells = vec![0u32; 16 * 16 * 16];
    for p in positions {
        let c = p.map(|x| ((x * 16.0) as usize).min(15));
        cells[(c[0] * 16 + c[1]) * 16 + c[2]] += 1;
    }
    let mean = positions.len() as f64 / cells.len() as f64;
    let var = cells
        .iter()
        .map(|&n| (n as f64 - mean).powi(2))
        .sum::<f64>()
        / cells.len() as f64;
    var / mean
}

#[test]
fn snapshot_is_strongly_clustered_and_dense_where_halos_are() {
    let s = demo_snapshot(200_000, 1);
    let dark = s.species(SpeciesKind::Dark).expect("dark");
    let ratio = count_in_cells_ratio(&dark.positions);
    assert!(ratio > 20.0, "variance/mean = {ratio}");
    // FoF at b = 0.2 links at ~81× the mean density; a good share of the gas must be denser.
    let gas = s.species(SpeciesKind::Gas).expect("gas");
    let rho = &gas.field("Density").expect("Density").values;
    let dense = rho.iter().filter(|&&x| x > 100.0).count() as f64 / rho.len() as f64;
    assert!((0.15..0.45).contains(&dense), "dense fraction {dense}");
}

#[test]
fn events_are_seeded_in_range_and_sources_are_harder_and_clustered() {
    let e = demo_events(5_000, 11);
    assert_eq!(e.len(), 5_000);
    assert_eq!(e, demo_events(5_000, 11));
    assert_ne!(e.ra, demo_events(5_000, 12).ra);
    assert!(e.ra.iter().all(|&x| (0.0..TAU).contains(&x)));
    assert!(e.dec.iter().all(|&x| x.abs() <= PI / 2.0));
    assert!(e.energy.iter().all(|&x| (2.0..=7.0).contains(&x)));
    let n_src = 6 * 20;
    let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len() as f64;
    assert!(mean(&e.energy[..n_src]) > mean(&e.energy[n_src..]) + 0.2);
    // Pairs closer than 1°: isotropic expectation is N²/2 · (1 − cos 1°)/2 ≈ 952 (Poisson σ ≈ 31);
    // the six sources of 20 events add a few hundred.
    let unit: Vec<[f64; 3]> =
        e.ra.iter()
            .zip(&e.dec)
            .map(|(&r, &d)| [d.cos() * r.cos(), d.cos() * r.sin(), d.sin()])
            .collect();
    let cos1 = 1f64.to_radians().cos();
    let mut close = 0u64;
    for i in 0..unit.len() {
        for j in i + 1..unit.len() {
            let dot: f64 = (0..3).map(|k| unit[i][k] * unit[j][k]).sum();
            close += u64::from(dot >= cos1);
        }
    }
    assert!(close > 1_250, "{close} close pairs");
}

#[test]
fn every_family_has_smoothing_lengths_close_to_its_knn_estimate() {
    let s = demo_snapshot(40_000, 5);
    for kind in [SpeciesKind::Dark, SpeciesKind::Star] {
        let sp = s.species(kind).expect("family");
        let h = sp.smoothing_lengths.as_ref().expect("smoothing lengths");
        assert_eq!(h.len(), sp.len());
        assert!(h.iter().all(|&x| x > 0.0 && x <= 0.1), "{kind}");
        // The generator's radius is the kNN radius of the density it sampled from; the
        // measured kNN distance scatters around it (Poisson noise of 32 neighbours, halos that
        // overlap), so compare the median of the ratio, not each particle.
        let knn = crate::render::smoothing::knn_smoothing_lengths(
            &sp.positions,
            crate::render::smoothing::DEFAULT_KNN,
            Some(1.0),
            &crate::jobs::Progress::none(),
        )
        .expect("kNN");
        let mut ratio: Vec<f32> = h.iter().zip(&knn).map(|(a, b)| a / b).collect();
        ratio.sort_by(f32::total_cmp);
        let median = ratio[ratio.len() / 2];
        assert!(
            (0.7..1.4).contains(&median),
            "{kind}: median h/kNN = {median}"
        );
    }
}
