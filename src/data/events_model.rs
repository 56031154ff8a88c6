use std::path::PathBuf;

/// A list of neutrino events. Angles in radians, energies as log10(E/GeV).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct EventList {
    /// Right ascension in radians, in [0, 2π).
    pub ra: Vec<f64>,
    /// Declination in radians, in [−π/2, π/2].
    pub dec: Vec<f64>,
    /// log10 of the reconstructed energy in GeV.
    pub energy: Vec<f64>,
    /// Angular uncertainty in radians, where the file has it.
    pub ang_err: Option<Vec<f64>>,
    /// Modified Julian date of each event, where the file has it.
    pub mjd: Option<Vec<f64>>,
    /// The files read, in order.
    pub sources: Vec<PathBuf>,
    /// The column names found in the (first) file, as written there.
    pub columns: Vec<String>,
}

impl EventList {
    /// Number of events.
    pub fn len(&self) -> usize {
        self.ra.len()
    }

    /// Whether there are no events.
    pub fn is_empty(&self) -> bool {
        self.ra.is_empty()
    }

    /// The lists one after another, in the order given (as `events::read` does with several
    /// files): an optional column is kept only when every list has it; the column names are the
    /// first list's.
    pub fn concatenated(lists: &[&EventList]) -> EventList {
        let optional = |get: fn(&EventList) -> &Option<Vec<f64>>| {
            lists
                .iter()
                .map(|list| get(list).as_deref())
                .collect::<Option<Vec<&[f64]>>>()
                .map(|parts| parts.concat())
        };
        EventList {
            ra: lists.iter().flat_map(|l| l.ra.iter().copied()).collect(),
            dec: lists.iter().flat_map(|l| l.dec.iter().copied()).collect(),
            energy: lists
                .iter()
                .flat_map(|l| l.energy.iter().copied())
                .collect(),
            ang_err: optional(|l| &l.ang_err),
            mjd: optional(|l| &l.mjd),
            sources: lists
                .iter()
                .flat_map(|l| l.sources.iter().cloned())
                .collect(),
            columns: lists.first().map(|l| l.columns.clone()).unwrap_or_default(),
        }
    }
}
