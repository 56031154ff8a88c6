//! Choosing which particles of a snapshot take part in friends-of-friends.

use super::error::FofError;
use crate::data::{Masses, Snapshot, SpeciesKind};
use std::borrow::Cow;

/// The particles of the chosen species, concatenated in file order (gas, dark, star, other).
/// A selection of one species borrows the snapshot's columns (a copy of 10⁸ positions and
/// velocities is 2.4 GB and seconds of page faults); several species are joined into new ones.
#[derive(Debug, Clone, PartialEq)]
pub struct SelectedParticles<'a> {
    /// Positions.
    pub positions: Cow<'a, [[f32; 3]]>,
    /// Masses (uniform when every selected species shares one mass).
    pub masses: Cow<'a, Masses>,
    /// Velocities, when every selected species has them.
    pub velocities: Option<Cow<'a, [[f32; 3]]>>,
    /// The species present in the selection, in file order.
    pub species: Vec<SpeciesKind>,
}

/// Parses `all`, or a comma list of `gas`, `dark`, `star`, `other`, into kinds in file order.
pub fn parse_species(list: &str) -> Result<Vec<SpeciesKind>, FofError> {
    let mut kinds = Vec::new();
    for name in list.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        if name.eq_ignore_ascii_case("all") {
            kinds.extend(SpeciesKind::ALL);
        } else {
            let kind = SpeciesKind::from_name(name)
                .ok_or_else(|| FofError::UnknownSpecies(name.into()))?;
            kinds.push(kind);
        }
    }
    if kinds.is_empty() {
        return Err(FofError::UnknownSpecies(list.to_owned()));
    }
    kinds.sort_unstable();
    kinds.dedup();
    Ok(kinds)
}

/// The periodic box the file declares (Gadget `BoxSize` of a periodic run), if any.
pub fn snapshot_box_size(snapshot: &Snapshot) -> Option<f64> {
    if snapshot.header.periodic {
        snapshot.header.box_size
    } else {
        None
    }
}

/// Concatenates the `kinds` of `snapshot` in file order (borrowed when one species is chosen);
/// an error when nothing is selected.
pub fn select_particles<'a>(
    snapshot: &'a Snapshot,
    kinds: &[SpeciesKind],
) -> Result<SelectedParticles<'a>, FofError> {
    let chosen: Vec<_> = snapshot
        .species
        .iter()
        .filter(|s| kinds.contains(&s.kind) && !s.is_empty())
        .collect();
    let n: usize = chosen.iter().map(|s| s.len()).sum();
    if n == 0 {
        let names: Vec<&str> = kinds.iter().map(|k| k.name()).collect();
        return Err(FofError::EmptySelection {
            selection: names.join(","),
        });
    }
    for s in &chosen {
        super::params::check_lengths(s.len(), &s.masses, s.velocities.as_deref())?;
    }
    if let [only] = chosen[..] {
        return Ok(SelectedParticles {
            positions: Cow::Borrowed(&only.positions),
            masses: Cow::Borrowed(&only.masses),
            velocities: only.velocities.as_deref().map(Cow::Borrowed),
            species: vec![only.kind],
        });
    }

    let mut positions = Vec::with_capacity(n);
    for s in &chosen {
        positions.extend_from_slice(&s.positions);
    }
    let uniform = match chosen[0].masses {
        Masses::Uniform(m) => chosen
            .iter()
            .all(|s| s.masses == Masses::Uniform(m))
            .then_some(m),
        Masses::PerParticle(_) => None,
    };
    let masses = match uniform {
        Some(m) => Masses::Uniform(m),
        None => {
            let mut all = Vec::with_capacity(n);
            for s in &chosen {
                match &s.masses {
                    Masses::Uniform(m) => all.extend(std::iter::repeat_n(*m, s.len())),
                    Masses::PerParticle(m) => all.extend_from_slice(m),
                }
            }
            Masses::PerParticle(all)
        }
    };
    let velocities = if chosen.iter().all(|s| s.velocities.is_some()) {
        let mut all = Vec::with_capacity(n);
        for v in chosen.iter().filter_map(|s| s.velocities.as_ref()) {
            all.extend_from_slice(v);
        }
        Some(all)
    } else {
        None
    };
    Ok(SelectedParticles {
        positions: Cow::Owned(positions),
        masses: Cow::Owned(masses),
        velocities: velocities.map(Cow::Owned),
        species: chosen.iter().map(|s| s.kind).collect(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn species_lists_parse_in_file_order() {
        assert_eq!(
            parse_species("star, dark").expect("parses"),
            vec![SpeciesKind::Dark, SpeciesKind::Star]
        );
        assert_eq!(parse_species("all").expect("parses"), SpeciesKind::ALL);
        assert!(matches!(
            parse_species("darkk"),
            Err(FofError::UnknownSpecies(_))
        ));
        assert!(parse_species(" , ").is_err());
    }
}
