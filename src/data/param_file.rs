//! PKDGRAV/ChaNGa/Gasoline `.param` files beside a tipsy snapshot: `name = value` lines, `#`
//! comments. They give the tipsy run's units (`dKpcUnit`, `dMsolUnit`), H₀ in code units
//! (`dHubble0`), the cosmology (`dOmega0`, `dLambda`, `dOmegab`) and `bComove`.

use super::ReadError;
use super::units::{CM_PER_KPC, G_PER_MSUN, UnitSource, Units};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Newton's constant in cgs (CODATA 2018), which ties tipsy's time and velocity units to its
/// length and mass units (G = 1 in code units).
const G_CGS: f64 = 6.674_30e-8;
/// cm in one Mpc.
const CM_PER_MPC: f64 = CM_PER_KPC * 1e3;

/// The `.param` file of tipsy snapshot `snapshot`: `<name up to its first dot>.param` beside
/// it, else the only `*.param` file in its folder; `None` when there is none.
pub fn find_beside(snapshot: &Path) -> Option<PathBuf> {
    let dir = snapshot
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let name = snapshot.file_name()?.to_str()?;
    let stem = name.split('.').next().unwrap_or(name);
    let named = dir.join(format!("{stem}.param"));
    if named.is_file() {
        return Some(named);
    }
    let mut found = std::fs::read_dir(dir)
        .ok()?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|e| e == "param") && p.is_file());
    let only = found.next()?;
    found.next().is_none().then_some(only)
}

/// The numeric `name = value` entries of a `.param` file (text values are skipped).
pub fn read(path: &Path) -> Result<BTreeMap<String, f64>, ReadError> {
    let text = std::fs::read_to_string(path).map_err(|e| ReadError::io(path, e))?;
    let mut out = BTreeMap::new();
    for (k, line) in text.lines().enumerate() {
        let line = line.split('#').next().unwrap_or("").trim();
        if line.is_empty() {
            continue;
        }
        let Some((name, value)) = line.split_once('=') else {
            return Err(ReadError::invalid(
                path,
                format!("line {}: expected `name = value`, found `{line}`", k + 1),
            ));
        };
        if let Ok(v) = value.trim().parse::<f64>() {
            out.insert(name.trim().to_owned(), v);
        }
    }
    Ok(out)
}

/// The unit system a `.param` file gives: lengths in `dKpcUnit` kpc (comoving when `bComove`,
/// no h), masses in `dMsolUnit` M☉, velocities √(G·M/L) (G = 1 in code units).
pub fn units(path: &Path, params: &BTreeMap<String, f64>) -> Result<Units, ReadError> {
    let positive = |name: &str| -> Result<f64, ReadError> {
        match params.get(name) {
            Some(&v) if v > 0.0 && v.is_finite() => Ok(v),
            Some(&v) => Err(ReadError::invalid(
                path,
                format!("{name} = {v}: expected a finite number > 0"),
            )),
            None => Err(ReadError::invalid(
                path,
                format!("{name} is missing (tipsy units need dKpcUnit and dMsolUnit)"),
            )),
        }
    };
    let length_cm = positive("dKpcUnit")? * CM_PER_KPC;
    let mass_g = positive("dMsolUnit")? * G_PER_MSUN;
    Ok(Units {
        length_cm: Some(length_cm),
        mass_g: Some(mass_g),
        velocity_cm_per_s: Some((G_CGS * mass_g / length_cm).sqrt()),
        comoving: params.get("bComove").is_some_and(|&b| b != 0.0),
        per_h: false,
        source: UnitSource::TipsyParam,
    })
}

/// h from `dHubble0` (H₀ in code units, 1/code time) and the units: H₀ = dHubble0·V/L.
pub fn hubble_param(params: &BTreeMap<String, f64>, units: &Units) -> Option<f64> {
    let h0_code = *params.get("dHubble0")?;
    let (l, v) = (units.length_cm?, units.velocity_cm_per_s?);
    let h0_per_s = h0_code * v / l;
    Some(h0_per_s * CM_PER_MPC / 1e5 / 100.0).filter(|h| h.is_finite() && *h > 0.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn param_file_gives_units_and_h() {
        let dir = tempfile::tempdir().expect("tempdir");
        let snap = dir.path().join("run.00200");
        std::fs::write(&snap, b"").expect("write");
        assert_eq!(find_beside(&snap), None);
        let param = dir.path().join("run.param");
        std::fs::write(
            &param,
            "# a run\ndKpcUnit = 1e5  # 100 Mpc\ndMsolUnit=2.0e15\nbComove = 1\n\
             achOutName = run\ndHubble0 = 2.8944\n",
        )
        .expect("write");
        assert_eq!(find_beside(&snap), Some(param.clone()));
        let p = read(&param).expect("read");
        assert_eq!(p.get("dKpcUnit"), Some(&1e5));
        assert!(!p.contains_key("achOutName"));
        let u = units(&param, &p).expect("units");
        assert_eq!(u.length_label(false), "c(100 Mpc)");
        let v = (G_CGS * 2.0e15 * G_PER_MSUN / (1e5 * CM_PER_KPC)).sqrt();
        assert_eq!(u.velocity_cm_per_s, Some(v));
        let h = hubble_param(&p, &u).expect("h");
        assert_eq!(h, 2.8944 * v / (1e5 * CM_PER_KPC) * CM_PER_MPC / 1e7);
        std::fs::write(&param, "dKpcUnit 3\n").expect("write");
        let e = read(&param).expect_err("no =").to_string();
        assert!(e.contains("run.param") && e.contains("line 1"), "{e}");
        std::fs::write(&param, "dKpcUnit = -3\ndMsolUnit = 1\n").expect("write");
        let e = units(&param, &read(&param).expect("read")).expect_err("negative");
        assert!(e.to_string().contains("dKpcUnit = -3"), "{e}");
    }
}
