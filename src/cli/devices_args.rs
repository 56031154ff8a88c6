//! `--devices`: which CUDA devices a command opens, shared by every subcommand that runs on CUDA.

use crate::backend::{Backend, BackendChoice, BackendError, DeviceSelection};
use clap::Args;

/// The `--devices` option (flattened into a subcommand's arguments beside `--backend`).
#[derive(Debug, Clone, Args)]
pub struct DevicesArgs {
    /// CUDA devices to use: `all` (every device the driver lists) or ordinals such as `0,1`;
    /// work that spreads over devices uses each of them, the rest runs on the first.
    #[arg(long, value_name = "all|0,1,...", default_value = "all")]
    pub devices: DeviceSelection,
}

impl DevicesArgs {
    /// Resolves `choice` on the selected devices ([`Backend::resolve_on`]).
    pub fn resolve(&self, choice: BackendChoice) -> Result<Backend, BackendError> {
        Backend::resolve_on(choice, &self.devices)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Debug, Parser)]
    struct Probe {
        #[command(flatten)]
        devices: DevicesArgs,
    }

    #[test]
    fn devices_default_to_all_and_read_lists_and_refuse_words() {
        let parse = |args: &[&str]| Probe::try_parse_from(args).map(|p| p.devices.devices);
        assert_eq!(parse(&["probe"]).expect("default"), DeviceSelection::All);
        assert_eq!(
            parse(&["probe", "--devices", "1,0"]).expect("list"),
            DeviceSelection::List(vec![1, 0])
        );
        let err = parse(&["probe", "--devices", "one"]).expect_err("word");
        assert!(
            err.to_string().contains("'one' is not a device number"),
            "{err}"
        );
    }
}
