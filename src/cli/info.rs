//! `haloscope info`.

use super::info_catalogue::{catalogue_text, describe_catalogue};
use super::progress_bar::terminal_progress;
use crate::data::{EventList, LoadOptions, Loaded, Snapshot, load_any};
use crate::halo::finders::{SubfindTable, read_catalogue};
use clap::Args;
use serde_json::{Map, Value, json};
use std::path::{Path, PathBuf};

/// Arguments of `haloscope info`.
#[derive(Debug, Args)]
pub struct InfoArgs {
    /// Input files (snapshots or event lists).
    #[arg(required = true)]
    pub files: Vec<PathBuf>,
    /// Print JSON on stdout (one object, or an array for several files).
    #[arg(long)]
    pub json: bool,
    /// Load at most this many particles (uniform deterministic subsample).
    #[arg(long)]
    pub max_particles: Option<u64>,
    /// SUBFIND catalogues: describe the Subhalo table instead of the Group table.
    #[arg(long)]
    pub subhalos: bool,
    /// Region to load (snapshots only).
    #[command(flatten)]
    pub region: super::region_args::RegionArgs,
}

/// Runs `haloscope info`.
pub fn run(args: InfoArgs) -> anyhow::Result<()> {
    let options = LoadOptions {
        max_particles: args.max_particles,
    };
    let mut described = Vec::new();
    for path in &args.files {
        // The reader's error already reads `<file>: <what>`.
        // Halo catalogues of other finders (SUBFIND, Rockstar, AHF), recognised by content.
        if crate::halo::finders::looks_like_catalogue(path)? {
            let table = if args.subhalos {
                SubfindTable::Subhalos
            } else {
                SubfindTable::Groups
            };
            let catalogue = read_catalogue(path, table)?;
            let value = describe_catalogue(path, &catalogue);
            if !args.json {
                eprintln!("{}", catalogue_text(&value));
            }
            described.push(value);
            continue;
        }
        let loaded = match args.region.region {
            Some(_) => Loaded::Snapshot(args.region.load(path, &options, &terminal_progress())?),
            None => load_any(path, &options, &terminal_progress())?,
        };
        let value = match &loaded {
            Loaded::Snapshot(s) => describe_snapshot(path, s),
            Loaded::Events(e) => describe_events(path, e),
        };
        if !args.json {
            eprintln!("{}", human_text(&value));
        }
        described.push(value);
    }
    if args.json {
        let out = match described.len() {
            1 => described.remove(0),
            _ => Value::Array(described),
        };
        println!("{out}");
    }
    Ok(())
}

/// The `info --json` object of a snapshot.
pub fn describe_snapshot(path: &Path, s: &Snapshot) -> Value {
    let mut species = Map::new();
    for sp in &s.species {
        species.insert(
            sp.kind.name().to_owned(),
            json!({ "count": sp.len(), "fields": sp.field_names() }),
        );
    }
    json!({
        "file": path.display().to_string(),
        "format": s.source.format.name(),
        "byte_order": s.source.byte_order,
        "header_bytes": s.source.header_bytes,
        "time": s.header.time,
        "redshift": s.header.redshift,
        "box_size": s.header.box_size,
        "periodic": s.header.periodic,
        "n_particles": s.n_particles(),
        "particles_in_file": s.source.particles_in_file,
        "species": species,
        "parameters": s.header.parameters,
        "units": units_json(s),
        "cosmology": cosmology_json(s),
        "files": s.source.paths.iter().map(|p| p.display().to_string()).collect::<Vec<_>>(),
    })
}

/// The unit system as `info --json` gives it: CGS sizes, flags and labels.
fn units_json(s: &Snapshot) -> Value {
    let u = &s.header.units;
    json!({
        "source": u.source.name(),
        "length_cm": u.length_cm,
        "mass_g": u.mass_g,
        "velocity_cm_per_s": u.velocity_cm_per_s,
        "comoving": u.comoving,
        "per_h": u.per_h,
        "length": u.length_label(false),
        "mass": u.mass_label(),
        "velocity": u.velocity_label(),
    })
}

/// Code, cosmology and kernel convention as `info --json` gives them.
fn cosmology_json(s: &Snapshot) -> Value {
    let h = &s.header;
    let c = &h.cosmology;
    json!({
        "code": h.code.name(),
        "hubble_param": c.hubble_param,
        "omega_matter": c.omega_matter,
        "omega_lambda": c.omega_lambda,
        "omega_baryon": c.omega_baryon,
        "comoving": c.comoving,
        "scale_factor": h.scale_factor(),
        "kernel": h.kernel.kernel,
        "kernel_support_over_h": h.kernel.support_over_h,
        "kernel_assumed": h.kernel.assumed,
    })
}

/// `[min, max]` of finite values, or null when there are none.
fn range(values: impl Iterator<Item = f64>) -> Value {
    let (lo, hi) = values
        .filter(|v| v.is_finite())
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), v| {
            (lo.min(v), hi.max(v))
        });
    if lo <= hi {
        json!([lo, hi])
    } else {
        Value::Null
    }
}

/// The `info --json` object of an event list (angles in degrees, energy in log10 GeV).
pub fn describe_events(path: &Path, e: &EventList) -> Value {
    json!({
        "file": path.display().to_string(),
        "format": "events",
        "n_events": e.len(),
        "columns": e.columns,
        "ra_range_deg": range(e.ra.iter().map(|r| r.to_degrees())),
        "dec_range_deg": range(e.dec.iter().map(|d| d.to_degrees())),
        "energy_range_log10_gev": range(e.energy.iter().copied()),
    })
}

/// Human-readable lines for one described file.
fn human_text(v: &Value) -> String {
    let get = |k: &str| match &v[k] {
        Value::Null => "-".to_owned(),
        Value::String(s) => s.clone(),
        other => other.to_string(),
    };
    let mut lines = vec![format!("{}: {}", get("file"), get("format"))];
    if v["format"] == "events" {
        lines.push(format!("  events:   {}", get("n_events")));
        lines.push(format!("  columns:  {}", get("columns")));
        lines.push(format!("  RA (deg): {}", get("ra_range_deg")));
        lines.push(format!("  Dec (deg): {}", get("dec_range_deg")));
        lines.push(format!("  log10(E/GeV): {}", get("energy_range_log10_gev")));
        return lines.join("\n");
    }
    if v["byte_order"].is_string() {
        lines.push(format!(
            "  encoding: {}-endian, {}-byte header",
            get("byte_order"),
            get("header_bytes")
        ));
    }
    lines.push(format!("  time:     {}", get("time")));
    lines.push(format!("  redshift: {}", get("redshift")));
    lines.push(format!(
        "  box:      {} (periodic: {})",
        get("box_size"),
        get("periodic")
    ));
    let (u, c) = (&v["units"], &v["cosmology"]);
    let text = |x: &Value| match x {
        Value::Null => "-".to_owned(),
        Value::String(s) => s.clone(),
        other => other.to_string(),
    };
    lines.push(format!(
        "  code:     {} (SPH kernel: {}, support {}·h)",
        text(&c["code"]),
        text(&c["kernel"]),
        text(&c["kernel_support_over_h"])
    ));
    lines.push(format!(
        "  units:    length {}, mass {}, velocity {} ({})",
        text(&u["length"]),
        text(&u["mass"]),
        text(&u["velocity"]),
        text(&u["source"])
    ));
    lines.push(format!(
        "  cosmology: h {}, Omega_m {}, Omega_Lambda {}, Omega_b {}, a {}",
        text(&c["hubble_param"]),
        text(&c["omega_matter"]),
        text(&c["omega_lambda"]),
        text(&c["omega_baryon"]),
        text(&c["scale_factor"])
    ));
    lines.push(format!(
        "  particles: {} (of {} in the file)",
        get("n_particles"),
        get("particles_in_file")
    ));
    if let Value::Object(species) = &v["species"] {
        for (name, s) in species {
            let fields: Vec<String> = s["fields"]
                .as_array()
                .map(|a| {
                    a.iter()
                        .filter_map(|f| f.as_str().map(str::to_owned))
                        .collect()
                })
                .unwrap_or_default();
            lines.push(format!(
                "  {name:<6} {:>12}  {}",
                s["count"],
                fields.join(", ")
            ));
        }
    }
    lines.join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data::demo::demo_events;

    #[test]
    fn event_description_gives_ranges_in_degrees() {
        let events = demo_events(2_000, 5);
        let v = describe_events(Path::new("demo.txt"), &events);
        assert_eq!(v["format"], "events");
        assert_eq!(v["n_events"], 2_000);
        let dec_min = events.dec.iter().copied().fold(f64::INFINITY, f64::min);
        let ra_max = events.ra.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        assert_eq!(v["dec_range_deg"][0], dec_min.to_degrees());
        assert_eq!(v["ra_range_deg"][1], ra_max.to_degrees());
        assert_eq!(v["columns"].as_array().map(Vec::len), Some(5));
        assert!(human_text(&v).contains("events:   2000"));
    }
}
