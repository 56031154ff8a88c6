//! Running the `haloscope` binary under `mpirun` with a deadline (a hung job fails the test).
#![allow(dead_code)]

use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

/// Longest a job of these tests may run before it counts as hung.
pub const DEADLINE: Duration = Duration::from_secs(60);

/// `mpirun --oversubscribe --allow-run-as-root -n ranks haloscope args…` in `dir`, killed and
/// failed if it outlives [`DEADLINE`].
pub fn mpirun(bin: &Path, ranks: usize, args: &[&str], dir: &Path) -> Output {
    let mut command = Command::new("mpirun");
    command
        .args(["--oversubscribe", "--allow-run-as-root", "-n"])
        .arg(ranks.to_string())
        .arg(bin)
        .args(args)
        .current_dir(dir)
        // Open MPI refuses to start as root without these when run under a plain shell.
        .env("OMPI_ALLOW_RUN_AS_ROOT", "1")
        .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    run_with_deadline(command)
}

/// The binary alone (one process, no launcher), with the same deadline.
pub fn solo(bin: &Path, args: &[&str], dir: &Path) -> Output {
    let mut command = Command::new(bin);
    command
        .args(args)
        .current_dir(dir)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    run_with_deadline(command)
}

/// One process on the first device when `ranks` is 1 (`--devices 0` added to `args`), else
/// `mpirun -n ranks`: the two sides of the GPU tests.
pub fn one_device_or_ranks(bin: &Path, ranks: usize, args: &[&str], dir: &Path) -> Output {
    if ranks == 1 {
        let args: Vec<&str> = args.iter().copied().chain(["--devices", "0"]).collect();
        solo(bin, &args, dir)
    } else {
        mpirun(bin, ranks, args, dir)
    }
}

fn run_with_deadline(mut command: Command) -> Output {
    let mut child = command.spawn().expect("start mpirun (Open MPI installed?)");
    let start = Instant::now();
    loop {
        if child.try_wait().expect("poll child").is_some() {
            return child.wait_with_output().expect("collect output");
        }
        if start.elapsed() > DEADLINE {
            let _ = child.kill();
            let out = child.wait_with_output().expect("collect output");
            panic!(
                "job hung for more than {DEADLINE:?}: {:?}\nstderr: {}",
                command,
                String::from_utf8_lossy(&out.stderr)
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}
