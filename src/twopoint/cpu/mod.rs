//! The CPU back-end: the stripe-and-window pair counter (rayon) and its trial loop, with the
//! simple reference counters the tests and benches check it against.

pub mod count;
pub mod trials;

pub use count::{count_pairs, count_pairs_brute_force, count_pairs_dec_sweep};
pub use trials::{run_trials, scrambled_ra, scrambled_ra_on};
