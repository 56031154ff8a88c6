//! `haloscope info CATALOGUE`: a summary of another finder's halo catalogue.

use crate::halo::finders::FinderCatalogue;
use serde_json::{Value, json};
use std::path::Path;

/// The `info --json` object of a halo catalogue (lengths and masses in its own units).
pub fn describe_catalogue(path: &Path, c: &FinderCatalogue) -> Value {
    let mut lower = [f64::INFINITY; 3];
    let mut upper = [f64::NEG_INFINITY; 3];
    for h in &c.halos {
        for axis in 0..3 {
            lower[axis] = lower[axis].min(h.centre[axis]);
            upper[axis] = upper[axis].max(h.centre[axis]);
        }
    }
    let largest = c
        .halos
        .iter()
        .max_by(|a, b| a.mass.total_cmp(&b.mass))
        .map(|h| {
            json!({
                "id": h.id, "n_particles": h.n_particles, "mass": h.mass,
                "centre": h.centre, "radius": h.radius,
            })
        });
    let (m_lo, m_hi) = c
        .halos
        .iter()
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), h| {
            (lo.min(h.mass), hi.max(h.mass))
        });
    json!({
        "file": path.display().to_string(),
        "format": "halo catalogue",
        "finder": c.finder.name(),
        "table": c.table,
        "files": c.paths.iter().map(|p| p.display().to_string()).collect::<Vec<_>>(),
        "n_halos": c.halos.len(),
        "n_with_host": c.halos.iter().filter(|h| h.host.is_some()).count(),
        "particles_in_halos": c.halos.iter().map(|h| h.n_particles).sum::<u64>(),
        "length_unit": c.length_unit.map_or("simulation length unit", |u| u.name()),
        "mass_unit": c.mass_unit,
        "radius": c.radius_name,
        "box_size": c.box_size,
        "scale_factor": c.scale_factor,
        "mass_range": (!c.halos.is_empty()).then_some([m_lo, m_hi]),
        "centre_range": (!c.halos.is_empty()).then_some([lower, upper]),
        "largest": largest,
    })
}

/// Human-readable lines for a described catalogue.
pub fn catalogue_text(v: &Value) -> String {
    let get = |k: &str| match &v[k] {
        Value::Null => "-".to_owned(),
        Value::String(s) => s.clone(),
        other => other.to_string(),
    };
    let mut lines = vec![format!(
        "{}: {} halo catalogue ({})",
        get("file"),
        get("finder"),
        get("table")
    )];
    lines.push(format!(
        "  halos:    {} ({} with a host), {} particles in them",
        get("n_halos"),
        get("n_with_host"),
        get("particles_in_halos")
    ));
    lines.push(format!(
        "  units:    lengths {}, masses {}, radius {}",
        get("length_unit"),
        get("mass_unit"),
        get("radius")
    ));
    lines.push(format!(
        "  box:      {}   scale factor: {}",
        get("box_size"),
        get("scale_factor")
    ));
    lines.push(format!("  masses:   {}", get("mass_range")));
    lines.push(format!("  centres:  {}", get("centre_range")));
    lines.push(format!("  largest:  {}", get("largest")));
    if let Some(files) = v["files"].as_array().filter(|f| f.len() > 1) {
        lines.push(format!("  files:    {}", files.len()));
    }
    lines.join("\n")
}
