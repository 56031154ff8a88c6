//! No input or older output is ever lost: an output onto an input or onto another output of the
//! same command is refused before any work (plain, through `dir/../dir`, through a hard link),
//! a failing writer leaves the older file intact, movie frames get the usual mode and an
//! interrupted movie's temporary files are removed by the next run.

mod common;
mod movie_common;

use common::{haloscope_bin, shared_data};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const TIPSY: &str = "snapshots/run581.20000";
const HDF5: &str = "snapshots/g2_lcdm_gas_snapshot_004.hdf5";
const DEMO_PATH: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/assets/paths/demo-flythrough.toml"
);

/// A writable copy of a shared file in `dir` (the shared files are read-only, and a read-only
/// file would hide an in-place overwrite behind "permission denied").
fn writable_copy(relative: &str, dir: &Path, name: &str) -> PathBuf {
    let copy = dir.join(name);
    std::fs::copy(shared_data(relative), &copy).expect("copy shared file");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&copy, std::fs::Permissions::from_mode(0o644)).expect("chmod");
    }
    copy
}

fn haloscope(args: &[&std::ffi::OsStr]) -> Output {
    Command::new(haloscope_bin())
        .args(args)
        .output()
        .expect("run haloscope")
}

/// Asserts exit code 1 with one error naming both files as the same, and `kept` unchanged.
fn assert_refused_same_file(output: &Output, kept: &Path, before: &[u8], what: &str) {
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{what}: {stderr}");
    assert!(
        stderr.starts_with("error: ") && stderr.contains(" is the same file as the "),
        "{what}: {stderr}"
    );
    assert!(!stderr.contains("panicked"), "{what}: {stderr}");
    let after = std::fs::read(kept).expect("the input is still there");
    assert!(after == before, "{what}: {} was changed", kept.display());
}

/// The three spellings of one file: itself, through `sub/../sub`, and a hard link to it.
fn spellings(snapshot: &Path, dir: &Path) -> Vec<PathBuf> {
    let name = snapshot.file_name().expect("file name");
    let folder = snapshot.parent().expect("folder");
    let folder_name = folder.file_name().expect("folder name");
    let dotted = folder.join("..").join(folder_name).join(name);
    let link = dir.join("hard-link.png");
    std::fs::hard_link(snapshot, &link).expect("hard link");
    vec![snapshot.to_path_buf(), dotted, link]
}

#[test]
fn render_never_writes_over_its_snapshot() {
    let dir = tempfile::tempdir().expect("tempdir");
    let sub = dir.path().join("sub");
    std::fs::create_dir(&sub).expect("mkdir");
    let snapshot = writable_copy(TIPSY, &sub, "snap");
    let before = std::fs::read(&snapshot).expect("read");
    for out in spellings(&snapshot, dir.path()) {
        for option in ["--out", "--tau-out"] {
            let other = dir.path().join("other.png");
            let (png, tau) = if option == "--out" {
                (out.clone(), dir.path().join("tau.npy"))
            } else {
                (other, out.clone())
            };
            let output = haloscope(&[
                "render".as_ref(),
                snapshot.as_os_str(),
                "--out".as_ref(),
                png.as_os_str(),
                "--tau-out".as_ref(),
                tau.as_os_str(),
                "--width".as_ref(),
                "16".as_ref(),
                "--height".as_ref(),
                "16".as_ref(),
            ]);
            let what = format!("render {option} {}", out.display());
            assert_refused_same_file(&output, &snapshot, &before, &what);
        }
    }
}

#[test]
fn render_refuses_tau_out_equal_to_out() {
    let dir = tempfile::tempdir().expect("tempdir");
    let snapshot = writable_copy(TIPSY, dir.path(), "snap");
    let before = std::fs::read(&snapshot).expect("read");
    let out = dir.path().join("image.png");
    let output = haloscope(&[
        "render".as_ref(),
        snapshot.as_os_str(),
        "--out".as_ref(),
        out.as_os_str(),
        "--tau-out".as_ref(),
        dir.path().join(".").join("image.png").as_os_str(),
    ]);
    assert_refused_same_file(&output, &snapshot, &before, "--tau-out = --out");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("--tau-out") && stderr.contains("the output --out"),
        "{stderr}"
    );
    assert!(!out.exists(), "nothing is written");
}

#[test]
fn fof_never_writes_over_its_snapshot_nor_labels_over_the_catalogue() {
    let dir = tempfile::tempdir().expect("tempdir");
    let sub = dir.path().join("sub");
    std::fs::create_dir(&sub).expect("mkdir");
    let snapshot = writable_copy(HDF5, &sub, "snap.hdf5");
    let before = std::fs::read(&snapshot).expect("read");
    for out in spellings(&snapshot, dir.path()) {
        for option in ["--out", "--labels"] {
            let output = haloscope(&[
                "fof".as_ref(),
                snapshot.as_os_str(),
                option.as_ref(),
                out.as_os_str(),
            ]);
            let what = format!("fof {option} {}", out.display());
            assert_refused_same_file(&output, &snapshot, &before, &what);
        }
    }
    let csv = dir.path().join("halos.csv");
    let output = haloscope(&[
        "fof".as_ref(),
        snapshot.as_os_str(),
        "--out".as_ref(),
        csv.as_os_str(),
        "--labels".as_ref(),
        csv.as_os_str(),
    ]);
    assert_refused_same_file(&output, &snapshot, &before, "--labels = --out");
    assert!(!csv.exists(), "nothing is written");
}

#[test]
fn movie_never_writes_its_mp4_over_the_snapshot_or_the_camera_path() {
    let dir = tempfile::tempdir().expect("tempdir");
    let sub = dir.path().join("sub");
    std::fs::create_dir(&sub).expect("mkdir");
    let snapshot = writable_copy(TIPSY, &sub, "snap");
    let before = std::fs::read(&snapshot).expect("read");
    let frames = dir.path().join("frames");
    for mp4 in spellings(&snapshot, dir.path()) {
        let output = haloscope(&[
            "movie".as_ref(),
            snapshot.as_os_str(),
            "--path".as_ref(),
            DEMO_PATH.as_ref(),
            "--out".as_ref(),
            frames.as_os_str(),
            "--mp4".as_ref(),
            mp4.as_os_str(),
            "--frames".as_ref(),
            "2".as_ref(),
        ]);
        let what = format!("movie --mp4 {}", mp4.display());
        assert_refused_same_file(&output, &snapshot, &before, &what);
    }
    let camera = dir.path().join("cam.toml");
    std::fs::copy(DEMO_PATH, &camera).expect("copy path");
    let camera_before = std::fs::read(&camera).expect("read");
    let output = haloscope(&[
        "movie".as_ref(),
        "--demo".as_ref(),
        "100".as_ref(),
        "--path".as_ref(),
        camera.as_os_str(),
        "--out".as_ref(),
        frames.as_os_str(),
        "--mp4".as_ref(),
        camera.as_os_str(),
    ]);
    assert_refused_same_file(&output, &camera, &camera_before, "movie --mp4 = --path");
    assert!(!frames.exists(), "no frame folder is made");
    // A camera path under a frame's name in the frame folder would become frame 0.
    std::fs::create_dir(&frames).expect("mkdir");
    let camera_as_frame = frames.join("frame_00000.png");
    std::fs::copy(DEMO_PATH, &camera_as_frame).expect("copy path");
    let output = haloscope(&[
        "movie".as_ref(),
        "--demo".as_ref(),
        "100".as_ref(),
        "--path".as_ref(),
        camera_as_frame.as_os_str(),
        "--out".as_ref(),
        frames.join("..").join("frames").as_os_str(),
        "--frames".as_ref(),
        "1".as_ref(),
    ]);
    assert_refused_same_file(&output, &camera_as_frame, &camera_before, "frame = --path");
}

/// Writes `old` at `path`, then a write that fails half-way must leave it byte for byte.
#[test]
fn a_failing_writer_leaves_the_older_file_and_no_temporary() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("labels.csv");
    std::fs::write(&path, b"label\n1\n2\n").expect("old file");
    let result = haloscope::output::write_atomically_io(&path, |writer| {
        writer.write_all(&[b'x'; 100_000])?;
        writer.flush()?;
        Err(std::io::Error::from_raw_os_error(28)) // ENOSPC, as a full disk gives
    });
    let err = result.expect_err("the write fails");
    assert!(
        err.to_string()
            .starts_with(&format!("{}: ", path.display()))
    );
    assert_eq!(std::fs::read(&path).expect("read"), b"label\n1\n2\n");
    let names: Vec<_> = std::fs::read_dir(dir.path())
        .expect("list")
        .map(|e| e.expect("entry").file_name())
        .collect();
    assert_eq!(names, vec![std::ffi::OsString::from("labels.csv")]);
}

/// The HDF5 catalogue is written under a temporary name: a failure after the file was created
/// and partly written leaves the older catalogue as it was.
#[test]
fn a_failing_hdf5_catalogue_leaves_the_older_one() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("halos.hdf5");
    std::fs::write(&path, b"older catalogue").expect("old file");
    let result = haloscope::halo::export::write_catalogue_hdf5_with(&path, |temp| {
        let file = hdf5::File::create(temp)?;
        file.new_dataset::<f64>()
            .shape([3])
            .create("mass")?
            .write_raw(&[1.0, 2.0, 3.0])?;
        Err(hdf5::Error::from("disk full"))
    });
    let err = result.expect_err("the write fails");
    assert_eq!(
        err.to_string(),
        format!("{}: HDF5: disk full", path.display())
    );
    assert_eq!(std::fs::read(&path).expect("read"), b"older catalogue");
    assert_eq!(std::fs::read_dir(dir.path()).expect("list").count(), 1);
}

/// Movie frames get the usual mode (0666 less the umask, as `File::create` gives), and a run
/// removes the temporary files an interrupted run of the same targets left, older than itself.
#[test]
fn movie_frames_have_the_usual_mode_and_stale_temporaries_go() {
    let dir = tempfile::tempdir().expect("tempdir");
    let frames = dir.path().join("frames");
    std::fs::create_dir(&frames).expect("mkdir");
    let mp4 = dir.path().join("movie.mp4");
    let hour_ago = std::time::SystemTime::now() - std::time::Duration::from_secs(3600);
    let stale_mp4 = dir.path().join(".movie.mp4.Ab12Cd.part");
    let stale_frame = frames.join(".frame_00001.png.x1Y2z3.part");
    let unrelated = dir.path().join(".other.mp4.Ab12Cd.part");
    for file in [&stale_mp4, &stale_frame, &unrelated] {
        let handle = std::fs::File::create(file).expect("stale file");
        handle.set_modified(hour_ago).expect("set mtime");
    }
    let output = haloscope(&[
        "movie".as_ref(),
        "--demo".as_ref(),
        "2000".as_ref(),
        "--path".as_ref(),
        DEMO_PATH.as_ref(),
        "--out".as_ref(),
        frames.as_os_str(),
        "--mp4".as_ref(),
        mp4.as_os_str(),
        "--frames".as_ref(),
        "2".as_ref(),
        "--width".as_ref(),
        "32".as_ref(),
        "--height".as_ref(),
        "32".as_ref(),
    ]);
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    movie_common::assert_usual_file_mode(&frames.join("frame_00000.png"));
    movie_common::assert_usual_file_mode(&frames.join("frame_00001.png"));
    assert!(!stale_mp4.exists(), "the interrupted MP4 is removed");
    assert!(!stale_frame.exists(), "the interrupted frame is removed");
    assert!(unrelated.exists(), "another target's file is kept");
    let mut left: Vec<_> = std::fs::read_dir(&frames)
        .expect("list")
        .map(|e| e.expect("entry").file_name())
        .collect();
    left.sort();
    assert_eq!(left, ["frame_00000.png", "frame_00001.png"]);
}

/// Ctrl-C (SIGINT) during a movie stops it with one error, keeps the finished frames and
/// removes the temporary MP4 and frame files at once.
#[cfg(unix)]
#[test]
fn an_interrupted_movie_leaves_no_temporary_files() {
    let dir = tempfile::tempdir().expect("tempdir");
    let frames = dir.path().join("frames");
    let mp4 = dir.path().join("movie.mp4");
    let mut child = Command::new(haloscope_bin())
        .args([
            "movie", "--demo", "100000", "--path", DEMO_PATH, "--frames", "2000",
        ])
        .args(["--width", "320", "--height", "240", "--out"])
        .arg(&frames)
        .arg("--mp4")
        .arg(&mp4)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("start haloscope");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while !frames.join("frame_00003.png").exists() {
        assert!(std::time::Instant::now() < deadline, "no frames after 60 s");
        assert!(child.try_wait().expect("wait").is_none(), "ended too early");
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    let pid = libc::pid_t::try_from(child.id()).expect("pid");
    // SAFETY: sends SIGINT to the child this test started and still holds.
    assert_eq!(unsafe { libc::kill(pid, libc::SIGINT) }, 0);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while child.try_wait().expect("wait").is_none() {
        if std::time::Instant::now() > deadline {
            child.kill().expect("kill");
            panic!("the movie did not stop within 60 s of Ctrl-C");
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let output = child.wait_with_output().expect("output");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("interrupted"), "{stderr}");
    for folder in [dir.path(), frames.as_path()] {
        let parts: Vec<_> = std::fs::read_dir(folder)
            .expect("list")
            .map(|e| e.expect("entry").file_name())
            .filter(|name| name.to_string_lossy().ends_with(".part"))
            .collect();
        assert!(parts.is_empty(), "{}: {parts:?}", folder.display());
    }
    assert!(
        frames.join("frame_00003.png").exists(),
        "finished frames are kept"
    );
    assert!(!mp4.exists(), "no MP4 of a cancelled export");
}
