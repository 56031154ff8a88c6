//! Two-point trials split by trial index over two CUDA devices equal one device exactly: every
//! batch's counts, the statistics, and `haloscope twopoint --json` (wall times aside). Ignored
//! here (no GPU); run on a machine with two GPUs with `--ignored`. Fewer than two devices fail
//! the tests, never skip them.

mod common;

use common::{haloscope_bin, shared_data};
use haloscope::backend::{Backend, BackendChoice, DeviceSelection};
use haloscope::data::events;
use haloscope::jobs::Progress;
use haloscope::twopoint::{Batches, TrialBatch, TwoPointConfig, TwoPointRun, prepare};
use std::process::Command;

fn ic86_files() -> [std::path::PathBuf; 2] {
    [
        shared_data("events/IC86-2011/upgoing_events.txt"),
        shared_data("events/IC86-2011/downgoing_events.txt"),
    ]
}

fn backend(ordinals: &[usize]) -> Backend {
    let selection = DeviceSelection::List(ordinals.to_vec());
    let backend = Backend::resolve_on(BackendChoice::Cuda, &selection)
        .expect("these tests need two NVIDIA GPUs");
    assert_eq!(backend.devices().len(), ordinals.len());
    backend
}

/// Every batch and the summary of `trials` trials in batches of `batch` on `backend`.
fn run(backend: &Backend, trials: u64, batch: usize) -> (Vec<TrialBatch>, String) {
    let [up, down] = ic86_files();
    let list = events::read(&[&up, &down], &Progress::none()).expect("read IC86-2011");
    let prepared = prepare(&list, &TwoPointConfig::default()).expect("prepare");
    let mut run = TwoPointRun::observe(prepared.clone(), 2011, 5, backend).expect("observe");
    let mut batches = Vec::new();
    haloscope::twopoint::run_trials_on(
        backend,
        &prepared,
        2011,
        5..5 + trials,
        batch,
        &Progress::none(),
        |b| batches.push(b),
    )
    .expect("trials");
    run.run_trials(trials, Batches::Fixed(batch), &Progress::none(), |_| {})
        .expect("run");
    let summary = serde_json::to_string(&run.analysis.summary()).expect("json");
    (batches, summary)
}

#[test]
#[ignore = "needs two NVIDIA GPUs; run on the GPU machine with --ignored"]
fn two_devices_give_one_devices_batches_and_statistics() {
    let one = backend(&[0]);
    let two = backend(&[0, 1]);
    for (trials, batch) in [(1000, 128), (301, 1000), (77, 5)] {
        let (batches_one, summary_one) = run(&one, trials, batch);
        let (batches_two, summary_two) = run(&two, trials, batch);
        assert_eq!(
            batches_two.len(),
            batches_one.len(),
            "{trials} trials, batch {batch}"
        );
        assert_eq!(batches_two, batches_one, "{trials} trials, batch {batch}");
        assert_eq!(summary_two, summary_one, "{trials} trials, batch {batch}");
    }
}

/// `haloscope twopoint --json` minus its wall times.
fn cli_json(devices: &str) -> serde_json::Value {
    let [up, down] = ic86_files();
    let out = Command::new(haloscope_bin())
        .args(["twopoint", "--backend", "cuda", "--devices", devices])
        .args(["--trials", "2000", "--seed", "7", "--json"])
        .arg(&up)
        .arg(&down)
        .output()
        .expect("run haloscope");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mut json: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    let object = json.as_object_mut().expect("object");
    for wall in ["seconds", "stage_seconds", "seconds_per_trial"] {
        assert!(object.remove(wall).is_some(), "no {wall}");
    }
    json
}

#[test]
#[ignore = "needs two NVIDIA GPUs; run on the GPU machine with --ignored"]
fn cli_json_on_two_devices_equals_one_device() {
    let one = cli_json("0");
    assert_eq!(one["trials"], 2000);
    assert_eq!(cli_json("0,1"), one);
    assert_eq!(cli_json("all"), one);
}
