//! Two-point autocorrelation of event lists: pair counts, scrambled trials, significance.
