//! Output formats: one exporter per file behind one small trait.
//!
//! Every file is written to a temporary file in the target directory and renamed into place, so an
//! interrupted run never leaves a half-written output behind.

mod bundle;
mod csv_out;
mod json;
mod markdown;
pub mod reference;
mod table;
pub mod target;

use std::io::Write;
use std::path::Path;

use crate::engine::RunReport;

pub use bundle::OutputDir;
pub use csv_out::{RequestsCsv, SummaryCsv};
pub use json::JsonExporter;
pub use markdown::MarkdownExporter;
pub use table::{align, render_table, render_table_with};

/// One output format.
pub trait Exporter {
    /// File name inside the output directory.
    fn file_name(&self) -> &'static str;
    /// The file's bytes.
    fn render(&self, report: &RunReport) -> Result<Vec<u8>, String>;
}

/// Extra formats for `--format`.
// No doc comments on the variants: clap would print them as each value's help.
#[allow(missing_docs)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    Csv,
    Json,
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
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), String> {
    let sync = !bundle::in_staging(path);
    write_atomic_with(path, |tmp| {
        let mut f = std::fs::File::create(tmp).map_err(|e| e.to_string())?;
        f.write_all(bytes).map_err(|e| e.to_string())?;
        if sync {
            f.sync_all().map_err(|e| e.to_string())?;
        }
        Ok(())
    })
}

/// Lets `write` fill a temporary file next to `path` (same extension, so encoders that pick the
/// format from the name still work), then renames it into place; on any failure the temporary
/// file is removed and `path` is left as it was.
pub fn write_atomic_with(
    path: &Path,
    write: impl FnOnce(&Path) -> Result<(), String>,
) -> Result<(), String> {
    crate::signals::install()?;
    crate::signals::check().map_err(|e| format!("{}: not written: {e}", path.display()))?;
    if bundle::in_staging(path) {
        // A staging directory is itself the transaction (its commit moves every file into
        // place, a failed run removes it): its files are written in place, without a temporary
        // file and a rename each.
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir)
                .map_err(|e| format!("{}: cannot create directory: {e}", dir.display()))?;
        }
        return write(path);
    }
    write_through_temp(path, write, true)
}

/// [`write_atomic`] that finishes even when a signal arrived: for the last step of a transaction
/// whose other steps already happened.
pub(crate) fn write_atomic_uninterrupted(path: &Path, bytes: &[u8]) -> Result<(), String> {
    write_through_temp(
        path,
        |tmp| {
            let mut f = std::fs::File::create(tmp).map_err(|e| e.to_string())?;
            f.write_all(bytes).map_err(|e| e.to_string())?;
            f.sync_all().map_err(|e| e.to_string())
        },
        false,
    )
}

fn write_through_temp(
    path: &Path,
    write: impl FnOnce(&Path) -> Result<(), String>,
    interruptible: bool,
) -> Result<(), String> {
    match target::file_target("output", path).map_err(|e| e.to_string())? {
        target::FileTarget::Replace(resolved) => {
            replace_through_temp(path, &resolved, write, interruptible)
        }
        target::FileTarget::Stream(stream) => write_stream(&stream, write),
    }
}

/// Writes a stream output (a device, a FIFO, `/dev/stdout`): the bytes are made in a private
/// temporary file (encoders pick the format from its name), then copied through, appending.
fn write_stream(
    path: &Path,
    write: impl FnOnce(&Path) -> Result<(), String>,
) -> Result<(), String> {
    let ext = path.extension().and_then(|e| e.to_str()).unwrap_or("tmp");
    let fail = |e: String| format!("{}: cannot write: {e}", path.display());
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    // A directory of our own (create_dir fails when the name exists), so no one else's file or
    // link is written through.
    let scratch =
        std::env::temp_dir().join(format!(".plancache-stream-{}-{nanos}", std::process::id()));
    std::fs::create_dir(&scratch).map_err(|e| fail(e.to_string()))?;
    let tmp = scratch.join(format!("out.{ext}"));
    let result = write(&tmp).and_then(|()| copy_into(&tmp, path));
    let _ = std::fs::remove_dir_all(&scratch);
    result.map_err(fail)
}

/// Appends the bytes of `from` to the stream `to`.
fn copy_into(from: &Path, to: &Path) -> Result<(), String> {
    let mut from = std::fs::File::open(from).map_err(|e| e.to_string())?;
    let mut to = std::fs::OpenOptions::new()
        .append(true)
        .open(to)
        .map_err(|e| e.to_string())?;
    std::io::copy(&mut from, &mut to)
        .and_then(|_| to.flush())
        .map_err(|e| e.to_string())
}

fn replace_through_temp(
    path: &Path,
    resolved: &Path,
    write: impl FnOnce(&Path) -> Result<(), String>,
    interruptible: bool,
) -> Result<(), String> {
    let dir = resolved
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir)
        .map_err(|e| format!("{}: cannot create directory: {e}", dir.display()))?;
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
        .and_then(|()| {
            if interruptible {
                crate::signals::check()
            } else {
                Ok(())
            }
        })
        .and_then(|()| std::fs::rename(&tmp, resolved).map_err(|e| e.to_string()))
        .map_err(|e| format!("{}: cannot write: {e}", path.display()));
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result
}

/// Renders every exporter and writes its file into `dir`.
pub fn write_all(
    dir: &Path,
    report: &RunReport,
    exporters: &[Box<dyn Exporter>],
) -> Result<(), String> {
    // Render everything first: nothing is written when any format fails.
    let rendered = exporters
        .iter()
        .map(|e| Ok((e.file_name(), e.render(report)?)))
        .collect::<Result<Vec<_>, String>>()?;
    for (name, bytes) in rendered {
        write_atomic(&dir.join(name), &bytes)?;
    }
    Ok(())
}
