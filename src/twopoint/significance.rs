//! One significance per bin, shown the same way by every face (window header, map, histogram
//! caption, CLI text and JSON).
//!
//! The trials measure p only while some trial reached the observed count. When the observed
//! count exceeds every one of N trials, the trials say only p < 1/(N+1): a bound, not a
//! measurement, so it is never quoted as "p = 1/(N+1)". The fitted background can go further,
//! but only by extrapolating its shape beyond every trial, so its p is carried separately and
//! always labelled as an extrapolation.

use super::stats::{BinStats, FitKind, sigma_of_p};
use serde::Serialize;

/// The fitted background's p of a bin beyond all trials: an extrapolation of the fit's tail.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct FittedExtrapolation {
    /// P(X ≥ observed) under the fit.
    pub p: f64,
    /// Φ⁻¹(1 − p) in σ (infinite when p underflowed to 0).
    pub sigma: f64,
    /// The fitted model: "gamma" or "gaussian".
    pub model: &'static str,
}

/// A bin's significance as the trials support it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum BinSignificance {
    /// No trials yet: nothing to compare with.
    NoTrials,
    /// Some trial reached the observed count: p = (n_ge + 1)/(trials + 1) is a measurement.
    Resolved {
        /// (n_ge + 1)/(trials + 1).
        p: f64,
        /// Φ⁻¹(1 − p) in σ.
        sigma: f64,
        /// Trials with count ≥ observed (≥ 1).
        n_ge: u64,
        /// Trials run.
        trials: u64,
    },
    /// The observed count exceeds every trial: p < 1/(trials + 1), a bound.
    BeyondAllTrials {
        /// Trials run.
        trials: u64,
        /// 1/(trials + 1): p lies below it.
        p_bound: f64,
        /// The fitted background's p, an extrapolation beyond the trials.
        fitted: Option<FittedExtrapolation>,
    },
}

/// Name of a fit's model as shown and written to JSON.
fn model_name(fit: &FitKind) -> &'static str {
    match fit {
        FitKind::Gamma { .. } => "gamma",
        FitKind::Gaussian { .. } => "gaussian",
    }
}

impl BinSignificance {
    /// Classifies one bin from its statistics after `trials` trials.
    pub fn of(stats: &BinStats, trials: u64) -> Self {
        if trials == 0 {
            return Self::NoTrials;
        }
        let n_ge = stats.trials_at_least_observed;
        if n_ge > 0 {
            let p = (n_ge + 1) as f64 / (trials + 1) as f64;
            return Self::Resolved {
                p,
                sigma: sigma_of_p(p),
                n_ge,
                trials,
            };
        }
        let fitted = match (stats.fit, stats.p_value_fit) {
            (Some(fit), Some(p)) if p.is_finite() => Some(FittedExtrapolation {
                p,
                // p = 0 is a fit tail below f64's range: beyond any finite σ.
                sigma: if p > 0.0 {
                    sigma_of_p(p)
                } else {
                    f64::INFINITY
                },
                model: model_name(&fit),
            }),
            _ => None,
        };
        Self::BeyondAllTrials {
            trials,
            p_bound: 1.0 / (trials + 1) as f64,
            fitted,
        }
    }

    /// The σ a map colours the bin with: the trials' σ, or the bound's σ (a lower limit) when
    /// beyond all trials; never the fit. NaN without trials.
    pub fn colour_sigma(&self) -> f64 {
        match *self {
            Self::NoTrials => f64::NAN,
            Self::Resolved { sigma, .. } => sigma,
            Self::BeyondAllTrials { p_bound, .. } => sigma_of_p(p_bound),
        }
    }

    /// Orders bins from the most significant: beyond all trials first (by fitted p, then
    /// unfitted), then resolved by p, then no trials.
    pub fn rank_key(&self) -> (u8, f64) {
        match *self {
            Self::BeyondAllTrials { fitted, .. } => (0, fitted.map_or(1.0, |f| f.p)),
            Self::Resolved { p, .. } => (1, p),
            Self::NoTrials => (2, 1.0),
        }
    }

    /// The significance in words, as every face shows it: "p = 4.98e-3 (2.58 sigma, 1 of 200
    /// trials ≥ observed)", "beyond all 200 trials (p < 4.98e-3; fit extrapolates p = 1.0e-20,
    /// 9.26 sigma, gamma)", "no trials yet".
    pub fn text(&self) -> String {
        match *self {
            Self::NoTrials => "no trials yet".to_owned(),
            Self::Resolved {
                p,
                sigma,
                n_ge,
                trials,
            } if sigma.is_finite() => {
                format!("p = {p:.3e} ({sigma:.2} sigma, {n_ge} of {trials} trials >= observed)")
            }
            // p = 1 (every trial reached the count) has no finite one-sided σ.
            Self::Resolved {
                p, n_ge, trials, ..
            } => format!("p = {p:.3e} ({n_ge} of {trials} trials >= observed)"),
            Self::BeyondAllTrials {
                trials,
                p_bound,
                fitted,
            } => {
                let bound = format!("beyond all {trials} trials (p < {p_bound:.3e}");
                match fitted {
                    Some(f) if f.p > 0.0 => format!(
                        "{bound}; fit extrapolates p = {:.1e}, {:.2} sigma, {})",
                        f.p, f.sigma, f.model
                    ),
                    Some(f) => format!("{bound}; fit extrapolates p below 1e-308, {})", f.model),
                    None => format!("{bound})"),
                }
            }
        }
    }

    /// The few characters a map cell holds: the trials' σ to one decimal, ">" when beyond all
    /// trials, nothing without trials.
    pub fn cell_text(&self) -> String {
        match *self {
            Self::NoTrials => String::new(),
            Self::Resolved { sigma, .. } => format!("{sigma:.1}"),
            Self::BeyondAllTrials { .. } => ">".to_owned(),
        }
    }

    /// The JSON object of one bin: `kind`, the trials' `p` and `sigma` (resolved only),
    /// `p_upper_bound` (beyond all trials only), and the fit's `fitted_p`, `fitted_sigma`,
    /// `fitted_model` with `fitted_is_extrapolation` (beyond all trials with a fit only).
    pub fn to_json(&self) -> serde_json::Value {
        use serde_json::json;
        match *self {
            Self::NoTrials => json!({"kind": "no_trials"}),
            Self::Resolved {
                p,
                sigma,
                n_ge,
                trials,
            } => json!({
                "kind": "resolved",
                "p": p,
                "sigma": sigma,
                "trials_at_least_observed": n_ge,
                "trials": trials,
            }),
            Self::BeyondAllTrials {
                trials,
                p_bound,
                fitted,
            } => {
                let mut object = json!({
                    "kind": "beyond_all_trials",
                    "trials": trials,
                    "p_upper_bound": p_bound,
                    "sigma_lower_bound": sigma_of_p(p_bound),
                });
                if let Some(f) = fitted {
                    object["fitted_p"] = json!(f.p);
                    // JSON has no infinity: an underflowed fit writes null.
                    object["fitted_sigma"] = json!(f.sigma.is_finite().then_some(f.sigma));
                    object["fitted_model"] = json!(f.model);
                    object["fitted_is_extrapolation"] = json!(true);
                }
                object
            }
        }
    }
}

/// The post-trial p of the most significant bin, classified like a bin's.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum PostTrialSignificance {
    /// No trials yet.
    NoTrials,
    /// Some trial's best bin was at least as extreme as the observed best: p is measured.
    Resolved {
        /// (as_extreme + 1)/(trials + 1).
        p: f64,
        /// Trials whose best bin was as extreme as the observed best (≥ 1).
        as_extreme: u64,
        /// Trials run.
        trials: u64,
    },
    /// No trial's best bin reached the observed best: p < 1/(trials + 1).
    BeyondAllTrials {
        /// Trials run.
        trials: u64,
        /// 1/(trials + 1).
        p_bound: f64,
    },
}

impl PostTrialSignificance {
    /// Classifies from the number of trials as extreme as the observation (`None`: no trials).
    pub fn of(as_extreme: Option<u64>, trials: u64) -> Self {
        match as_extreme {
            None => Self::NoTrials,
            Some(_) if trials == 0 => Self::NoTrials,
            Some(0) => Self::BeyondAllTrials {
                trials,
                p_bound: 1.0 / (trials + 1) as f64,
            },
            Some(n) => Self::Resolved {
                p: (n + 1) as f64 / (trials + 1) as f64,
                as_extreme: n,
                trials,
            },
        }
    }

    /// In words: "post-trial p = 0.250 (2 of 7 trials as extreme)", "post-trial: beyond all
    /// 200 trials (p < 4.98e-3)", "post-trial p: after the first trial".
    pub fn text(&self) -> String {
        match *self {
            Self::NoTrials => "post-trial p: after the first trial".to_owned(),
            Self::Resolved {
                p,
                as_extreme,
                trials,
            } => format!("post-trial p = {p:.3e} ({as_extreme} of {trials} trials as extreme)"),
            Self::BeyondAllTrials { trials, p_bound } => {
                format!("post-trial: beyond all {trials} trials (p < {p_bound:.3e})")
            }
        }
    }

    /// `{"kind", "p"}` (resolved) or `{"kind", "p_upper_bound"}` (beyond all trials).
    pub fn to_json(&self) -> serde_json::Value {
        use serde_json::json;
        match *self {
            Self::NoTrials => json!({"kind": "no_trials"}),
            Self::Resolved {
                p,
                as_extreme,
                trials,
            } => {
                json!({"kind": "resolved", "p": p, "trials_as_extreme": as_extreme, "trials": trials})
            }
            Self::BeyondAllTrials { trials, p_bound } => {
                json!({"kind": "beyond_all_trials", "trials": trials, "p_upper_bound": p_bound})
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stats(n_ge: u64, fit: Option<(FitKind, f64)>) -> BinStats {
        BinStats {
            observed: 30,
            background_mean: 10.0,
            background_variance: 9.0,
            ts: 3.0,
            trials_at_least_observed: n_ge,
            p_value: (n_ge + 1) as f64 / 200.0,
            significance_sigma: sigma_of_p((n_ge + 1) as f64 / 200.0),
            fit: fit.map(|f| f.0),
            fit_ks_distance: fit.map(|_| 0.01),
            p_value_fit: fit.map(|f| f.1),
            significance_sigma_fit: fit.map(|f| sigma_of_p(f.1)),
        }
    }

    const GAMMA: FitKind = FitKind::Gamma {
        shape: 11.1,
        scale: 0.9,
    };

    #[test]
    fn no_trials_says_so() {
        let s = BinSignificance::of(&stats(0, None), 0);
        assert_eq!(s, BinSignificance::NoTrials);
        assert_eq!(s.text(), "no trials yet");
        assert_eq!(s.cell_text(), "");
        assert!(s.colour_sigma().is_nan());
        assert_eq!(s.to_json(), serde_json::json!({"kind": "no_trials"}));
    }

    #[test]
    fn resolved_is_the_trials_p_and_ignores_the_fit() {
        let s = BinSignificance::of(&stats(3, Some((GAMMA, 1e-9))), 199);
        assert_eq!(
            s,
            BinSignificance::Resolved {
                p: 0.02,
                sigma: sigma_of_p(0.02),
                n_ge: 3,
                trials: 199,
            }
        );
        assert_eq!(
            s.text(),
            "p = 2.000e-2 (2.05 sigma, 3 of 199 trials >= observed)"
        );
        assert_eq!(s.cell_text(), "2.1");
        assert_eq!(s.colour_sigma(), sigma_of_p(0.02));
        let json = s.to_json();
        assert_eq!(json["kind"], "resolved");
        assert_eq!(json["p"], 0.02);
        assert!(json.get("fitted_p").is_none());
        let everywhere = BinSignificance::of(&stats(20, None), 20);
        assert_eq!(
            everywhere.text(),
            "p = 1.000e0 (20 of 20 trials >= observed)"
        );
    }

    #[test]
    fn beyond_all_trials_is_a_bound_with_the_fit_marked_as_extrapolation() {
        let s = BinSignificance::of(&stats(0, Some((GAMMA, 1e-20))), 200);
        let BinSignificance::BeyondAllTrials {
            trials,
            p_bound,
            fitted,
        } = s
        else {
            panic!("{s:?}");
        };
        assert_eq!(trials, 200);
        assert_eq!(p_bound, 1.0 / 201.0);
        let fitted = fitted.expect("fit");
        assert_eq!((fitted.p, fitted.model), (1e-20, "gamma"));
        assert_eq!(
            s.text(),
            "beyond all 200 trials (p < 4.975e-3; fit extrapolates p = 1.0e-20, 9.26 sigma, gamma)"
        );
        assert_eq!(s.cell_text(), ">");
        // Coloured by the bound (2.58 σ), never by the fit's 9.26 σ.
        assert_eq!(s.colour_sigma(), sigma_of_p(1.0 / 201.0));
        let json = s.to_json();
        assert_eq!(json["kind"], "beyond_all_trials");
        assert_eq!(json["p_upper_bound"], 1.0 / 201.0);
        assert_eq!(json["fitted_p"], 1e-20);
        assert_eq!(json["fitted_model"], "gamma");
        assert_eq!(json["fitted_is_extrapolation"], true);
        assert!(json.get("p").is_none());

        let unfitted = BinSignificance::of(&stats(0, None), 20);
        assert_eq!(unfitted.text(), "beyond all 20 trials (p < 4.762e-2)");
        assert!(unfitted.to_json().get("fitted_p").is_none());
        // A fit tail that underflowed is beyond any σ and written as null.
        let underflow = BinSignificance::of(&stats(0, Some((GAMMA, 0.0))), 20);
        assert_eq!(underflow.to_json()["fitted_sigma"], serde_json::Value::Null);
        assert_eq!(
            underflow.text(),
            "beyond all 20 trials (p < 4.762e-2; fit extrapolates p below 1e-308, gamma)"
        );
        assert!(underflow.rank_key() < unfitted.rank_key());
        assert!(unfitted.rank_key() < s_resolved_key());
    }

    fn s_resolved_key() -> (u8, f64) {
        BinSignificance::of(&stats(1, None), 20).rank_key()
    }

    #[test]
    fn post_trial_is_a_bound_when_no_trial_was_as_extreme() {
        assert_eq!(
            PostTrialSignificance::of(None, 0),
            PostTrialSignificance::NoTrials
        );
        let beyond = PostTrialSignificance::of(Some(0), 199);
        assert_eq!(
            beyond.text(),
            "post-trial: beyond all 199 trials (p < 5.000e-3)"
        );
        assert_eq!(beyond.to_json()["p_upper_bound"], 0.005);
        let resolved = PostTrialSignificance::of(Some(2), 7);
        assert_eq!(
            resolved.text(),
            "post-trial p = 3.750e-1 (2 of 7 trials as extreme)"
        );
        assert_eq!(resolved.to_json()["p"], 0.375);
    }
}
