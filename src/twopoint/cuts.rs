//! Energy cuts: the top fraction f of events by energy (DESIGN §6).
//!
//! k = ceil(f·N); the threshold is the k-th largest energy; an event passes when its energy is
//! ≥ the threshold, so all ties at the threshold pass (n_pass ≥ k). A pair counts for a cut when
//! both events pass.

use super::TwoPointError;
use serde::Serialize;

/// One energy cut as applied to an event list.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct EnergyCut {
    /// Name used in JSON output: `all` for f = 1, else `top<100·f>` (`top10`, `top1`, `top0.1`).
    pub name: String,
    /// Fraction of events kept, in (0, 1].
    pub fraction: f64,
    /// k = ceil(f·N).
    pub k: usize,
    /// The k-th largest log10(E/GeV).
    pub threshold: f64,
    /// Number of events with energy ≥ threshold.
    pub n_pass: usize,
}

impl EnergyCut {
    /// Events that pass only because their energy equals the threshold: n_pass − k.
    pub fn ties_at_threshold(&self) -> usize {
        self.n_pass.saturating_sub(self.k)
    }

    /// The cut with what it depends on, as every face shows it: "top 1 %: E ≥ 10^5.20 GeV,
    /// 1,043 events (3 more than k = 1,040: ties at the threshold pass)".
    pub fn description(&self) -> String {
        let label = match self.name.strip_prefix("top") {
            Some(percent) => format!("top {percent} %"),
            None => self.name.clone(),
        };
        let mut text = format!(
            "{label}: E ≥ 10^{:.2} GeV, {} events",
            self.threshold,
            thousands(self.n_pass)
        );
        let ties = self.ties_at_threshold();
        if ties > 0 {
            text += &format!(
                " ({ties} more than k = {}: ties at the threshold pass)",
                thousands(self.k)
            );
        }
        text
    }
}

/// An integer with commas between thousands: 1043 → "1,043".
pub fn thousands(n: usize) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// The JSON name of a cut fraction: `all`, `top10`, `top1`, `top0.1`, …
pub fn cut_name(fraction: f64) -> String {
    if fraction >= 1.0 {
        return "all".to_owned();
    }
    // Round away binary noise (0.001·100 = 0.1000000000000000055…).
    let percent = (fraction * 100.0 * 1e9).round() / 1e9;
    format!("top{percent}")
}

/// k = ceil(f·N), reading f as the decimal the user wrote: a product within 1e-9 (relative) of
/// an integer is that integer, so 0.1·36900 gives 3690 whatever the rounding of 0.1.
pub fn cut_k(fraction: f64, n_events: usize) -> usize {
    let product = fraction * n_events as f64;
    let nearest = product.round();
    let k = if (product - nearest).abs() <= 1e-9 * nearest.max(1.0) {
        nearest
    } else {
        product.ceil()
    };
    (k as usize).clamp(1, n_events.max(1))
}

/// Applies cut fractions to energies (log10 GeV). Fractions must lie in (0, 1] and be distinct.
pub fn energy_cuts(fractions: &[f64], energy: &[f64]) -> Result<Vec<EnergyCut>, TwoPointError> {
    if energy.is_empty() {
        return Err(TwoPointError::NoEvents);
    }
    if fractions.is_empty() {
        return Err(TwoPointError::Config(
            "at least one energy cut is needed".into(),
        ));
    }
    let mut sorted_desc = energy.to_vec();
    sorted_desc.sort_unstable_by(|a, b| b.total_cmp(a));
    let mut cuts: Vec<EnergyCut> = Vec::with_capacity(fractions.len());
    for &fraction in fractions {
        if !(fraction > 0.0 && fraction <= 1.0) {
            return Err(TwoPointError::Config(format!(
                "energy cut fraction must lie in (0, 1], got {fraction}"
            )));
        }
        let name = cut_name(fraction);
        if cuts.iter().any(|c| c.name == name) {
            return Err(TwoPointError::Config(format!(
                "energy cut {name} given twice"
            )));
        }
        let k = cut_k(fraction, energy.len());
        let threshold = sorted_desc[k - 1];
        let n_pass = sorted_desc.partition_point(|&e| e >= threshold);
        cuts.push(EnergyCut {
            name,
            fraction,
            k,
            threshold,
            n_pass,
        });
    }
    Ok(cuts)
}

/// Cut levels: cuts ordered from the loosest to the tightest threshold, so that passing one
/// implies passing every looser one. `level(e)` = how many of them event e passes; a pair
/// counts for the cut at position p of this order when both its events have level > p.
#[derive(Debug, Clone, PartialEq)]
pub struct CutLevels {
    /// Thresholds in ascending order (loosest first).
    pub thresholds_ascending: Vec<f64>,
    /// For each cut in the user's order, its position in `thresholds_ascending`.
    pub position_of_cut: Vec<usize>,
}

impl CutLevels {
    /// Orders `cuts` by threshold (ties keep the user's order; equal thresholds pass alike).
    pub fn new(cuts: &[EnergyCut]) -> Self {
        let mut order: Vec<usize> = (0..cuts.len()).collect();
        order.sort_by(|&a, &b| cuts[a].threshold.total_cmp(&cuts[b].threshold));
        let mut position_of_cut = vec![0; cuts.len()];
        for (position, &cut) in order.iter().enumerate() {
            position_of_cut[cut] = position;
        }
        Self {
            thresholds_ascending: order.iter().map(|&c| cuts[c].threshold).collect(),
            position_of_cut,
        }
    }

    /// How many cuts an event of this energy passes.
    pub fn level(&self, energy: f64) -> u8 {
        self.thresholds_ascending.partition_point(|&t| energy >= t) as u8
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_k() {
        assert_eq!(cut_name(1.0), "all");
        assert_eq!(cut_name(0.1), "top10");
        assert_eq!(cut_name(0.01), "top1");
        assert_eq!(cut_name(0.001), "top0.1");
        assert_eq!(cut_k(0.1, 36_900), 3690);
        assert_eq!(cut_k(0.001, 36_900), 37);
        assert_eq!(cut_k(0.001, 36_901), 37);
        assert_eq!(cut_k(0.1, 138_322), 13_833);
        assert_eq!(cut_k(1e-9, 10), 1);
    }

    #[test]
    fn ties_at_the_threshold_pass() {
        let energy = [1.0, 5.0, 3.0, 3.0, 3.0, 2.0];
        let cuts = energy_cuts(&[1.0, 0.5, 0.2], &energy).expect("cuts");
        assert_eq!(cuts[1].k, 3);
        assert_eq!(cuts[1].threshold, 3.0);
        assert_eq!(cuts[1].n_pass, 4);
        assert_eq!(cuts[2].k, 2);
        assert_eq!(cuts[2].threshold, 3.0);
        assert_eq!(cuts[2].n_pass, 4);
        assert_eq!(cuts[0].n_pass, 6);
        let levels = CutLevels::new(&cuts);
        assert_eq!(levels.level(5.0), 3);
        assert_eq!(levels.level(2.0), 1);
        assert!(energy_cuts(&[0.0], &energy).is_err());
        assert!(energy_cuts(&[0.1, 0.1], &energy).is_err());
        assert!(energy_cuts(&[1.0], &[]).is_err());
        assert_eq!(cuts[1].ties_at_threshold(), 1);
        assert_eq!(
            cuts[1].description(),
            "top 50 %: E ≥ 10^3.00 GeV, 4 events (1 more than k = 3: ties at the threshold pass)"
        );
        assert_eq!(cuts[0].ties_at_threshold(), 0);
        assert_eq!(cuts[0].description(), "all: E ≥ 10^1.00 GeV, 6 events");
    }

    #[test]
    fn thousands_separators() {
        assert_eq!(thousands(0), "0");
        assert_eq!(thousands(999), "999");
        assert_eq!(thousands(1_043), "1,043");
        assert_eq!(thousands(138_322), "138,322");
        assert_eq!(thousands(1_000_000), "1,000,000");
    }
}
