//! Neutrino event lists (IceCube release text formats, CSV).
//!
//! Accepted layout: optional comment lines, one header line naming the columns (a leading `#` is
//! optional), then one event per line. Fields are separated by whitespace (spaces or tabs), or by
//! commas when the header contains a comma. Line ends may be LF, CRLF or a lone CR, and a UTF-8
//! byte-order mark before the first line is skipped. After the header, blank
//! lines and lines starting with `#` are skipped. Columns are found by name, case-insensitively,
//! ignoring bracketed units (`RA[deg]` is `RA`):
//!
//! | column | names |
//! |---|---|
//! | right ascension (degrees, required) | `RA` |
//! | declination (degrees, required) | `Dec` |
//! | log10 energy (required) | `log10(E/GeV)`, `log10(E)`, `logE` |
//! | angular error (degrees, optional) | `AngErr`, `ang_err` |
//! | time (optional) | `MJD` |
//!
//! Other columns (`Azimuth`, `Zenith`, …) are ignored. Angles become radians; RA must lie in
//! [0°, 360°] and RA = 360° becomes 0; Dec must lie in [−90°, 90°]; every value read must be a
//! finite number. Anything else is a [`ReadError`] naming the file, the line and the column;
//! quoted input in messages is cut to [`QUOTE_CHARS`] characters, and a line longer than
//! [`MAX_LINE_BYTES`] is refused, so memory stays in proportion to the events read.

use super::{EventList, ReadError};
use crate::jobs::Progress;
use std::io::{BufRead, BufReader, Read};
use std::path::Path;

/// How many bytes [`looks_like_events`] reads to decide.
const PEEK_BYTES: usize = 8192;

/// Longest line accepted: far beyond any event row or header, small enough that a file with no
/// line ends (a sparse or binary file) is refused after this much, not read whole.
pub const MAX_LINE_BYTES: usize = 4 << 20;

/// Most characters of input quoted in an error message.
pub const QUOTE_CHARS: usize = 80;

/// `text` cut to [`QUOTE_CHARS`] characters, with `…` and the full length where it was cut.
fn quote(text: &str) -> String {
    match text.char_indices().nth(QUOTE_CHARS) {
        None => text.to_owned(),
        Some((cut, _)) => format!("{}… ({} bytes in all)", &text[..cut], text.len()),
    }
}

/// Why the next line could not be taken.
enum LineError {
    Io(std::io::Error),
    TooLong,
}

/// Reads the next line into `buf` (without its end: LF, CRLF or a lone CR); returns the bytes
/// consumed, 0 at the end of the input. Never holds more than [`MAX_LINE_BYTES`] of one line.
fn next_line(reader: &mut impl BufRead, buf: &mut Vec<u8>) -> Result<usize, LineError> {
    buf.clear();
    let mut consumed = 0;
    loop {
        let available = reader.fill_buf().map_err(LineError::Io)?;
        if available.is_empty() {
            return Ok(consumed);
        }
        let end = available.iter().position(|&b| b == b'\n' || b == b'\r');
        let take = end.unwrap_or(available.len());
        if buf.len() + take > MAX_LINE_BYTES {
            return Err(LineError::TooLong);
        }
        buf.extend_from_slice(&available[..take]);
        let Some(end) = end else {
            reader.consume(take);
            consumed += take;
            continue;
        };
        let was_cr = available[end] == b'\r';
        reader.consume(end + 1);
        consumed += end + 1;
        if was_cr && reader.fill_buf().map_err(LineError::Io)?.first() == Some(&b'\n') {
            reader.consume(1);
            consumed += 1;
        }
        return Ok(consumed);
    }
}

/// Report progress and check for cancellation every this many lines.
const LINES_PER_REPORT: u64 = 16_384;

/// Which quantity a column holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Quantity {
    Ra,
    Dec,
    Energy,
    AngErr,
    Mjd,
}

impl Quantity {
    /// The quantity named by a header field, if any (case-insensitive, bracketed units dropped).
    fn from_name(name: &str) -> Option<Self> {
        let key = normalised_name(name);
        match key.as_str() {
            "ra" => Some(Self::Ra),
            "dec" => Some(Self::Dec),
            "log10(e/gev)" | "log10(e)" | "loge" | "log10e" => Some(Self::Energy),
            "angerr" | "ang_err" => Some(Self::AngErr),
            "mjd" => Some(Self::Mjd),
            _ => None,
        }
    }
}

/// Lower-cased name with `[...]` unit annotations removed.
fn normalised_name(name: &str) -> String {
    let mut key = String::with_capacity(name.len());
    let mut depth = 0usize;
    for ch in name.chars() {
        match ch {
            '[' => depth += 1,
            ']' => depth = depth.saturating_sub(1),
            _ if depth == 0 && !ch.is_whitespace() => key.extend(ch.to_lowercase()),
            _ => {}
        }
    }
    key
}

/// Field separator of a file, decided from its header line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Separator {
    Whitespace,
    Comma,
}

impl Separator {
    fn of_header(header: &str) -> Self {
        if header.contains(',') {
            Self::Comma
        } else {
            Self::Whitespace
        }
    }

    /// Splits a line into trimmed fields, as byte ranges of `line` (so that the buffer of
    /// ranges can be reused while the line buffer is refilled).
    fn split(self, line: &str, out: &mut Vec<std::ops::Range<usize>>) {
        out.clear();
        let base = line.as_ptr() as usize;
        let range = |field: &str| {
            let start = field.as_ptr() as usize - base;
            start..start + field.len()
        };
        match self {
            Self::Whitespace => out.extend(line.split_whitespace().map(range)),
            Self::Comma => out.extend(line.split(',').map(str::trim).map(range)),
        }
    }
}

/// The header of one file: where each quantity sits.
#[derive(Debug, Clone)]
struct Header {
    names: Vec<String>,
    separator: Separator,
    ra: usize,
    dec: usize,
    energy: usize,
    ang_err: Option<usize>,
    mjd: Option<usize>,
}

/// A header line split into names: the text after an optional leading `#`.
fn header_names(line: &str) -> (Separator, Vec<String>) {
    let text = line.trim().trim_start_matches('#').trim();
    let separator = Separator::of_header(text);
    let mut fields = Vec::new();
    separator.split(text, &mut fields);
    let names = fields.into_iter().map(|r| text[r].to_string()).collect();
    (separator, names)
}

/// Whether a header line names both an RA and a Dec column.
fn names_ra_and_dec(names: &[String]) -> bool {
    let found = |q| names.iter().any(|n| Quantity::from_name(n) == Some(q));
    found(Quantity::Ra) && found(Quantity::Dec)
}

/// Parses a header line, or explains which required column is missing.
fn parse_header(line: &str) -> Result<Header, String> {
    let (separator, names) = header_names(line);
    let mut slots: [Option<usize>; 5] = [None; 5];
    for (index, name) in names.iter().enumerate() {
        let Some(quantity) = Quantity::from_name(name) else {
            continue;
        };
        let slot = &mut slots[quantity as usize];
        if slot.is_some() {
            return Err(format!("header names column `{}` twice", quote(name)));
        }
        *slot = Some(index);
    }
    let [ra, dec, energy, ang_err, mjd] = slots;
    let listed = quote(&names.join(" "));
    let Some(ra) = ra else {
        return Err(format!("no RA column in header `{listed}`"));
    };
    let Some(dec) = dec else {
        return Err(format!("no Dec column in header `{listed}`"));
    };
    let Some(energy) = energy else {
        return Err(format!(
            "no energy column (log10(E/GeV), log10(E) or logE) in header `{listed}`"
        ));
    };
    Ok(Header {
        names,
        separator,
        ra,
        dec,
        energy,
        ang_err,
        mjd,
    })
}

/// Whether the file looks like an event list: its first few KiB are text and one of the first
/// lines is a header naming RA and Dec columns. Binary snapshots (tipsy, HDF5) give `false`.
pub fn looks_like_events(path: &Path) -> Result<bool, ReadError> {
    let file = std::fs::File::open(path).map_err(|e| ReadError::io(path, e))?;
    let mut head = Vec::with_capacity(PEEK_BYTES);
    file.take(PEEK_BYTES as u64)
        .read_to_end(&mut head)
        .map_err(|e| ReadError::io(path, e))?;
    Ok(looks_like_events_bytes(&head))
}

/// Whether the first bytes of a file (the first 8 KiB or fewer) look like an event list; see
/// [`looks_like_events`].
pub fn looks_like_events_bytes(head: &[u8]) -> bool {
    if head.contains(&0) {
        return false;
    }
    let text = match std::str::from_utf8(head) {
        Ok(text) => text,
        // A multi-byte character cut by the peek window is still text.
        Err(e) if e.error_len().is_none() => {
            std::str::from_utf8(&head[..e.valid_up_to()]).unwrap_or_default()
        }
        Err(_) => return false,
    };
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    text.split(['\n', '\r'])
        .filter(|line| !line.trim().is_empty())
        .take(16)
        .any(|line| names_ra_and_dec(&header_names(line).1))
}

/// Reads and concatenates event files in the order given.
pub fn read(paths: &[&Path], progress: &Progress) -> Result<EventList, ReadError> {
    let Some(first) = paths.first() else {
        return Err(ReadError::invalid("", "no event files given"));
    };
    let total_bytes: u64 = paths
        .iter()
        .map(|p| std::fs::metadata(p).map(|m| m.len()).unwrap_or(0))
        .sum();
    let mut events = EventList::default();
    let mut bytes_before = 0u64;
    for path in paths {
        crate::output::require_regular_file(path).map_err(|e| ReadError::io(*path, e))?;
        let file = std::fs::File::open(path).map_err(|e| ReadError::io(*path, e))?;
        let file_bytes = file.metadata().map(|m| m.len()).unwrap_or(0);
        let mut reader = BufReader::with_capacity(1 << 16, file);
        let names = read_one(
            &mut reader,
            path,
            &mut events,
            progress,
            bytes_before,
            total_bytes,
        )?;
        if path == first {
            events.columns = names;
        }
        events.sources.push(path.to_path_buf());
        bytes_before += file_bytes;
    }
    progress.report("reading", total_bytes, total_bytes);
    Ok(events)
}

/// Reads an event list held in memory (for fuzzing and tests); `name` labels errors.
pub fn read_from_bytes(
    bytes: &[u8],
    name: &Path,
    progress: &Progress,
) -> Result<EventList, ReadError> {
    let mut events = EventList::default();
    let total_bytes = bytes.len() as u64;
    let mut reader = bytes;
    events.columns = read_one(&mut reader, name, &mut events, progress, 0, total_bytes)?;
    events.sources.push(name.to_path_buf());
    progress.report("reading", total_bytes, total_bytes);
    Ok(events)
}

/// Reads one file's events onto the end of `events`; returns its column names.
fn read_one(
    reader: &mut impl BufRead,
    path: &Path,
    events: &mut EventList,
    progress: &Progress,
    bytes_before: u64,
    total_bytes: u64,
) -> Result<Vec<String>, ReadError> {
    let invalid = |line_no: u64, message: String| {
        ReadError::invalid(path, format!("line {line_no}: {message}"))
    };
    let mut buf = Vec::new();
    let mut line_no = 0u64;
    let mut bytes_read = 0u64;
    let mut header: Option<Header> = None;
    let mut fields: Vec<std::ops::Range<usize>> = Vec::new();
    let n_before = events.len();
    loop {
        let n = next_line(reader, &mut buf).map_err(|e| match e {
            LineError::Io(e) => ReadError::io(path, e),
            LineError::TooLong => invalid(
                line_no + 1,
                format!("line longer than {MAX_LINE_BYTES} bytes (not an event list?)"),
            ),
        })?;
        if n == 0 {
            break;
        }
        line_no += 1;
        bytes_read += n as u64;
        let Ok(mut line) = std::str::from_utf8(&buf) else {
            return Err(invalid(line_no, "not UTF-8 text (binary file?)".into()));
        };
        if buf.contains(&0) {
            return Err(invalid(line_no, "holds a NUL byte (binary file?)".into()));
        }
        if line_no == 1 {
            line = line.strip_prefix('\u{feff}').unwrap_or(line);
        }
        if line_no.is_multiple_of(LINES_PER_REPORT) {
            if progress.is_cancelled() {
                return Err(ReadError::Cancelled {
                    path: path.to_path_buf(),
                });
            }
            progress.report("reading", bytes_before + bytes_read, total_bytes);
        }
        let text = line.trim();
        if text.is_empty() {
            continue;
        }
        let Some(columns) = &header else {
            let (_, names) = header_names(text);
            // Comment lines before the header are skipped; the first line that is not a
            // comment, or a `#` line naming RA and Dec, is the header.
            if text.starts_with('#') && !names_ra_and_dec(&names) {
                continue;
            }
            header = Some(parse_header(text).map_err(|m| invalid(line_no, m))?);
            continue;
        };
        if text.starts_with('#') {
            continue;
        }
        columns.separator.split(text, &mut fields);
        if fields.len() != columns.names.len() {
            return Err(invalid(
                line_no,
                format!(
                    "expected {} fields ({}), found {}",
                    columns.names.len(),
                    quote(&columns.names.join(" ")),
                    fields.len()
                ),
            ));
        }
        let value = |index: usize| -> Result<f64, ReadError> {
            let raw = &text[fields[index].clone()];
            let fail = |what: &str| {
                let name = quote(&columns.names[index]);
                invalid(
                    line_no,
                    format!("column {name}: `{}` is {what}", quote(raw)),
                )
            };
            match raw.parse::<f64>() {
                Ok(v) if v.is_finite() => Ok(v),
                Ok(_) => Err(fail("not finite")),
                Err(_) => Err(fail("not a number")),
            }
        };
        let ra_deg = value(columns.ra)?;
        let dec_deg = value(columns.dec)?;
        let energy = value(columns.energy)?;
        if !(0.0..=360.0).contains(&ra_deg) {
            let name = quote(&columns.names[columns.ra]);
            return Err(invalid(
                line_no,
                format!("column {name}: RA {ra_deg} outside [0, 360] degrees"),
            ));
        }
        if !(-90.0..=90.0).contains(&dec_deg) {
            let name = quote(&columns.names[columns.dec]);
            return Err(invalid(
                line_no,
                format!("column {name}: Dec {dec_deg} outside [-90, 90] degrees"),
            ));
        }
        // RA = 360° is the same direction as 0°; keep RA in [0, 2π).
        let ra_deg = if ra_deg == 360.0 { 0.0 } else { ra_deg };
        let index = events.len();
        events.ra.push(ra_deg.to_radians());
        events.dec.push(dec_deg.to_radians());
        events.energy.push(energy);
        let ang_err_deg = columns.ang_err.map(value).transpose()?;
        if let (Some(err), Some(column)) = (ang_err_deg, columns.ang_err)
            && err < 0.0
        {
            let name = quote(&columns.names[column]);
            return Err(invalid(
                line_no,
                format!("column {name}: angular error {err} is negative"),
            ));
        }
        push_optional(&mut events.ang_err, index, ang_err_deg.map(f64::to_radians));
        push_optional(&mut events.mjd, index, columns.mjd.map(value).transpose()?);
    }
    let Some(columns) = header else {
        return Err(ReadError::invalid(
            path,
            "empty file: no header line naming RA and Dec columns",
        ));
    };
    if events.len() == n_before {
        return Err(ReadError::invalid(
            path,
            format!("no events after the header (line count {line_no})"),
        ));
    }
    Ok(columns.names)
}

/// Appends an optional per-event value for event number `index`. A column that only some files
/// have is kept only while every event so far has it; once an event lacks it, it is `None`.
fn push_optional(column: &mut Option<Vec<f64>>, index: usize, value: Option<f64>) {
    match (column.as_mut(), value) {
        (Some(values), Some(v)) => values.push(v),
        (None, Some(v)) if index == 0 => *column = Some(vec![v]),
        _ => *column = None,
    }
}
