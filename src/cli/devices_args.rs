//! `--devices`: which CUDA devices a command opens, shared by every subcommand that runs on CUDA.

use crate::backend::{Backend, BackendChoice, BackendError, DeviceSelection};
use crate::cluster::Collective;
use crate::gpu::{DriverThread, GpuDevice};
use clap::Args;

/// The `--devices` option (flattened into a subcommand's arguments beside `--backend`). Its
/// default is the command's: `twopoint` spreads its trials over every device; `render` and
/// `movie` keep one device, since copying a snapshot to several costs more than a one-shot
/// frame gains (several ranks of one host still take one device each).
#[derive(Debug, Clone, Args)]
pub struct DevicesArgs {
    /// CUDA devices to use: `all` (every device the driver lists) or ordinals such as `0,1`;
    /// work that spreads over devices uses each of them, the rest runs on the first
    /// [default: all for twopoint, the first device for render and movie].
    #[arg(long, value_name = "all|0,1,...")]
    pub devices: Option<DeviceSelection>,
}

impl DevicesArgs {
    /// The devices named, or `default` (the command's) when `--devices` is not given.
    pub fn selection(&self, default: DeviceSelection) -> DeviceSelection {
        self.devices.clone().unwrap_or(default)
    }

    /// Resolves `choice` on the selected devices ([`Backend::resolve_on`]).
    pub fn resolve(
        &self,
        choice: BackendChoice,
        default: DeviceSelection,
    ) -> Result<Backend, BackendError> {
        Backend::resolve_on(choice, &self.selection(default))
    }

    /// [`Self::resolve`] for one rank of a job: where several ranks share a host, each takes
    /// its own part of the selected devices (every device when none is named;
    /// [`devices_of_rank`]), so that two ranks on a 2-GPU host use one GPU each.
    pub fn resolve_for_rank(
        &self,
        choice: BackendChoice,
        collective: &dyn Collective,
        default: DeviceSelection,
    ) -> Result<Backend, BackendError> {
        let (local_rank, local_size) = (collective.local_rank(), collective.local_size());
        self.resolve_for_host_rank(choice, local_rank, local_size, default)
    }

    /// [`Self::resolve_for_rank`] begun on a thread of its own, so that the rank reads its
    /// share while the driver opens its devices (a context takes about a third of a second);
    /// nothing is started, and the join gives `None`, for the CPU.
    pub fn start_for_rank(
        &self,
        choice: BackendChoice,
        collective: &dyn Collective,
        default: DeviceSelection,
    ) -> DriverThread<Result<Backend, BackendError>> {
        let devices = self.clone();
        let (local_rank, local_size) = (collective.local_rank(), collective.local_size());
        DriverThread::spawn_if(choice != BackendChoice::Cpu, move || {
            devices.resolve_for_host_rank(choice, local_rank, local_size, default)
        })
    }

    /// [`Self::resolve_for_rank`] for the rank `local_rank` of the `local_size` ranks of its
    /// host, without the job's collective.
    fn resolve_for_host_rank(
        &self,
        choice: BackendChoice,
        local_rank: usize,
        local_size: usize,
        default: DeviceSelection,
    ) -> Result<Backend, BackendError> {
        if local_size <= 1 || choice == BackendChoice::Cpu {
            return self.resolve(choice, default);
        }
        let ordinals = match &self.selection(DeviceSelection::All) {
            DeviceSelection::First => vec![0],
            DeviceSelection::All => (0..GpuDevice::count().unwrap_or(0)).collect(),
            DeviceSelection::List(list) => list.clone(),
        };
        if ordinals.is_empty() {
            // No driver or no device: resolve as one process would, with its fallback or error.
            return self.resolve(choice, default);
        }
        let mine = devices_of_rank(&ordinals, local_rank, local_size);
        Backend::resolve_on(choice, &DeviceSelection::List(mine))
    }
}

/// The devices of the rank `local_rank` of `local_size` ranks on one host: every
/// `local_size`-th of `ordinals` starting at its own, or one shared device when the ranks
/// outnumber the devices.
pub fn devices_of_rank(ordinals: &[usize], local_rank: usize, local_size: usize) -> Vec<usize> {
    let mine: Vec<usize> = ordinals
        .iter()
        .skip(local_rank)
        .step_by(local_size.max(1))
        .copied()
        .collect();
    match (mine.is_empty(), ordinals.is_empty()) {
        (true, false) => vec![ordinals[local_rank % ordinals.len()]],
        _ => mine,
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
    fn devices_default_to_the_commands_and_read_lists_and_refuse_words() {
        let parse = |args: &[&str]| Probe::try_parse_from(args).map(|p| p.devices);
        let unset = parse(&["probe"]).expect("default");
        assert_eq!(unset.selection(DeviceSelection::All), DeviceSelection::All);
        assert_eq!(
            unset.selection(DeviceSelection::First),
            DeviceSelection::First
        );
        let listed = parse(&["probe", "--devices", "1,0"]).expect("list");
        assert_eq!(
            listed.selection(DeviceSelection::First),
            DeviceSelection::List(vec![1, 0])
        );
        let all = parse(&["probe", "--devices", "all"]).expect("all");
        assert_eq!(all.selection(DeviceSelection::First), DeviceSelection::All);
        let err = parse(&["probe", "--devices", "one"]).expect_err("word");
        assert!(
            err.to_string().contains("'one' is not a device number"),
            "{err}"
        );
    }

    #[test]
    fn ranks_of_a_host_share_its_devices_out() {
        assert_eq!(devices_of_rank(&[0, 1], 0, 2), [0]);
        assert_eq!(devices_of_rank(&[0, 1], 1, 2), [1]);
        assert_eq!(devices_of_rank(&[0, 1, 2, 3], 1, 2), [1, 3]);
        assert_eq!(devices_of_rank(&[3, 1], 0, 1), [3, 1]);
        assert_eq!(devices_of_rank(&[0, 1], 2, 3), [0]);
        assert_eq!(devices_of_rank(&[5], 3, 4), [5]);
    }
}
