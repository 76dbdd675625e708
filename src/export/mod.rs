//! Output formats: one exporter per file behind one small trait.
//!
//! Every file is written to a temporary file in the target directory and renamed into place, so an
//! interrupted run never leaves a half-written output behind.

mod bundle;
mod csv_out;
mod error;
mod json;
mod markdown;
pub mod reference;
mod table;
pub mod target;

use std::io::Write;
use std::path::Path;

use crate::engine::RunReport;

pub use crate::signals::{InstallError, Interrupted};
pub use bundle::OutputDir;
pub use csv_out::{RequestsCsv, SummaryCsv};
pub use error::{Cause, ExportError};
pub use json::JsonExporter;
pub use markdown::MarkdownExporter;
pub use table::{align, render_table, render_table_with};

/// One output format.
pub trait Exporter {
    /// File name inside the output directory.
    fn file_name(&self) -> &'static str;
    /// The file's bytes.
    fn render(&self, report: &RunReport) -> Result<Vec<u8>, ExportError>;
}

/// Extra formats for `--format` (the binary's mirror in `cli/values.rs` carries the help text).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// The two CSV files only.
    Csv,
    /// The CSVs and `run.json`.
    Json,
    /// The CSVs and `summary.md`.
    Markdown,
}

/// Exporters for `--out DIR`: the two CSVs always, plus the requested extra format.
pub fn exporters(format: Format) -> Vec<Box<dyn Exporter>> {
    let mut v: Vec<Box<dyn Exporter>> = vec![Box::new(RequestsCsv), Box::new(SummaryCsv)];
    match format {
        Format::Csv => {}
        Format::Json => v.push(Box::new(JsonExporter)),
        Format::Markdown => v.push(Box::new(MarkdownExporter)),
    }
    v
}

/// Writes `bytes` to `path` through a temporary file and a rename. The file is synced to disk
/// before the rename, except inside an [`OutputDir`]'s staging directory, whose commit syncs the
/// whole directory once.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), ExportError> {
    let sync = !bundle::in_staging(path);
    write_atomic_with(path, |tmp| {
        let mut f = std::fs::File::create(tmp)?;
        f.write_all(bytes)?;
        if sync {
            f.sync_all()?;
        }
        Ok::<(), std::io::Error>(())
    })
}

/// Lets `write` fill a temporary file next to `path` (same extension, so encoders that pick the
/// format from the name still work), then renames it into place; on any failure the temporary
/// file is removed and `path` is left as it was.
pub fn write_atomic_with<E: Into<Cause>>(
    path: &Path,
    write: impl FnOnce(&Path) -> Result<(), E>,
) -> Result<(), ExportError> {
    crate::signals::install()?;
    crate::signals::check().map_err(|source| ExportError::NotWritten {
        path: path.to_path_buf(),
        source,
    })?;
    if bundle::in_staging(path) {
        // A staging directory is itself the transaction (its commit moves every file into
        // place, a failed run removes it): its files are written in place, without a temporary
        // file and a rename each.
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir)
                .map_err(ExportError::io(dir, "cannot create directory"))?;
        }
        return write(path).map_err(|e| ExportError::Write {
            path: path.to_path_buf(),
            source: e.into(),
        });
    }
    write_through_temp(path, write, true)
}

/// [`write_atomic`] that finishes even when a signal arrived: for the last step of a transaction
/// whose other steps already happened.
pub(crate) fn write_atomic_uninterrupted(path: &Path, bytes: &[u8]) -> Result<(), ExportError> {
    write_through_temp(
        path,
        |tmp| {
            let mut f = std::fs::File::create(tmp)?;
            f.write_all(bytes)?;
            f.sync_all()
        },
        false,
    )
}

fn write_through_temp<E: Into<Cause>>(
    path: &Path,
    write: impl FnOnce(&Path) -> Result<(), E>,
    interruptible: bool,
) -> Result<(), ExportError> {
    match target::file_target("output", path)? {
        target::FileTarget::Replace(resolved) => {
            replace_through_temp(path, &resolved, write, interruptible)
        }
        target::FileTarget::Stream(stream) => write_stream(&stream, write),
    }
}

/// Writes a stream output (a device, a FIFO, `/dev/stdout`): the bytes are made in a private
/// temporary file (encoders pick the format from its name), then copied through, appending.
fn write_stream<E: Into<Cause>>(
    path: &Path,
    write: impl FnOnce(&Path) -> Result<(), E>,
) -> Result<(), ExportError> {
    let ext = path.extension().and_then(|e| e.to_str()).unwrap_or("tmp");
    let fail = |source: Cause| ExportError::Write {
        path: path.to_path_buf(),
        source,
    };
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    // A directory of our own (create_dir fails when the name exists), so no one else's file or
    // link is written through.
    let scratch =
        std::env::temp_dir().join(format!(".plancache-stream-{}-{nanos}", std::process::id()));
    std::fs::create_dir(&scratch).map_err(|e| fail(e.into()))?;
    let tmp = scratch.join(format!("out.{ext}"));
    let result = write(&tmp)
        .map_err(Into::into)
        .and_then(|()| copy_into(&tmp, path).map_err(Cause::from));
    let _ = std::fs::remove_dir_all(&scratch);
    result.map_err(fail)
}

/// Appends the bytes of `from` to the stream `to`.
fn copy_into(from: &Path, to: &Path) -> Result<(), std::io::Error> {
    let mut from = std::fs::File::open(from)?;
    let mut to = std::fs::OpenOptions::new().append(true).open(to)?;
    std::io::copy(&mut from, &mut to).and_then(|_| to.flush())
}

fn replace_through_temp<E: Into<Cause>>(
    path: &Path,
    resolved: &Path,
    write: impl FnOnce(&Path) -> Result<(), E>,
    interruptible: bool,
) -> Result<(), ExportError> {
    let dir = resolved
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir).map_err(ExportError::io(dir, "cannot create directory"))?;
    let name = resolved
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or("output");
    let ext = resolved
        .extension()
        .and_then(|e| e.to_str())
        .unwrap_or("tmp");
    let tmp = dir.join(format!(".{name}.tmp-{}.{ext}", std::process::id()));
    let result = write(&tmp)
        .map_err(Into::into)
        .and_then(|()| {
            if interruptible {
                crate::signals::check().map_err(Cause::from)
            } else {
                Ok(())
            }
        })
        .and_then(|()| std::fs::rename(&tmp, resolved).map_err(Cause::from))
        .map_err(|source| ExportError::Write {
            path: path.to_path_buf(),
            source,
        });
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result
}

/// The signal (SIGINT, SIGTERM) that stopped the writers, if one arrived: the binary exits with
/// 128 + its number.
pub fn interrupted_by() -> Option<i32> {
    crate::signals::received()
}

/// `Err` once SIGINT or SIGTERM arrived: a loop writing many files into an [`OutputDir`] calls
/// this between files and stops.
pub fn check_interrupted() -> Result<(), Interrupted> {
    crate::signals::check()
}

/// Renders every exporter and writes its file into `dir`.
pub fn write_all(
    dir: &Path,
    report: &RunReport,
    exporters: &[Box<dyn Exporter>],
) -> Result<(), ExportError> {
    // Render everything first: nothing is written when any format fails.
    let rendered = exporters
        .iter()
        .map(|e| Ok((e.file_name(), e.render(report)?)))
        .collect::<Result<Vec<_>, ExportError>>()?;
    for (name, bytes) in rendered {
        write_atomic(&dir.join(name), &bytes)?;
    }
    Ok(())
}
