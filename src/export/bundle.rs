//! An output directory written as one transaction: a run writes its files into a staging
//! directory inside the target, and only a complete run moves them into place, removes the files
//! of the previous run of the same kind that it did not write again (stale charts), and records
//! what it wrote in a manifest. An interrupted or failed run removes its staging directory and
//! leaves the previous output as it was.
//!
//! Only files listed in the previous manifest are ever removed, so `--out .` or a directory shared
//! with other files is safe. Each kind of output (`report`, `sweep`, `generate`) has its own
//! manifest, so a report and a sweep can share a directory.

use std::collections::BTreeSet;
use std::path::{Component, Path, PathBuf};

use super::{write_atomic_uninterrupted, ExportError};

/// Prefix of staging directories; anything starting with it is ours to remove.
const STAGING_PREFIX: &str = ".plancache-staging-";

/// Whether `path` lies inside a staging directory (its files are synced once, at the commit).
pub(crate) fn in_staging(path: &Path) -> bool {
    path.components().any(|c| match c {
        Component::Normal(n) => n.to_string_lossy().starts_with(STAGING_PREFIX),
        _ => false,
    })
}

/// Flushes the staged files to disk in one call for the whole file system (`syncfs`), instead
/// of one `fsync` per file: a report writes hundreds of charts.
fn sync_staging(staging: &Path) -> Result<(), ExportError> {
    let dir = std::fs::File::open(staging).map_err(ExportError::io(staging, "cannot open"))?;
    #[cfg(target_os = "linux")]
    {
        use std::os::fd::AsRawFd;
        // SAFETY: syncfs on a descriptor we own and keep open for the call.
        if unsafe { libc::syncfs(dir.as_raw_fd()) } != 0 {
            let e = std::io::Error::last_os_error();
            return Err(ExportError::io(staging, "cannot sync")(e));
        }
    }
    #[cfg(not(target_os = "linux"))]
    {
        let mut files = Vec::new();
        list_files(staging, Path::new(""), &mut files)?;
        for rel in files {
            let f = std::fs::File::open(staging.join(&rel)).map_err(ExportError::Sync)?;
            f.sync_all().map_err(ExportError::Sync)?;
        }
    }
    drop(dir);
    Ok(())
}

/// Makes the renames into `dir` durable.
fn sync_dir(dir: &Path) {
    if let Ok(d) = std::fs::File::open(dir) {
        let _ = d.sync_all();
    }
}

/// A run's output directory in the making.
#[derive(Debug)]
pub struct OutputDir {
    target: PathBuf,
    staging: PathBuf,
    kind: &'static str,
    /// The target did not exist before this run (removed again when the run fails and leaves
    /// nothing in it).
    created_target: bool,
    committed: bool,
}

impl OutputDir {
    /// Starts writing a `kind` output (a short name: `report`, `sweep`, ...) into `target`.
    pub fn begin(target: &Path, kind: &'static str) -> Result<OutputDir, ExportError> {
        crate::signals::install()?;
        crate::signals::check()?;
        let created_target = !target.exists();
        std::fs::create_dir_all(target)
            .map_err(ExportError::io(target, "cannot create directory"))?;
        if !target.is_dir() {
            return Err(ExportError::NotDir {
                path: target.to_path_buf(),
            });
        }
        let staging = target.join(format!("{STAGING_PREFIX}{kind}-{}", std::process::id()));
        // A staging directory of an earlier process with our pid would be stale: start afresh.
        let _ = std::fs::remove_dir_all(&staging);
        std::fs::create_dir(&staging)
            .map_err(ExportError::io(&staging, "cannot create directory"))?;
        Ok(OutputDir {
            target: target.to_path_buf(),
            staging,
            kind,
            created_target,
            committed: false,
        })
    }

    /// Where the run writes its files (the same relative layout as in the target).
    pub fn path(&self) -> &Path {
        &self.staging
    }

    /// The final directory.
    pub fn target(&self) -> &Path {
        &self.target
    }

    /// Moves the staged files into place, removes the previous run's files that this run did not
    /// write, and writes the manifest. Refuses (and cleans up) when a signal arrived.
    pub fn commit(mut self) -> Result<Vec<PathBuf>, ExportError> {
        crate::signals::check()?;
        let mut files = Vec::new();
        list_files(&self.staging, Path::new(""), &mut files)?;
        let written: BTreeSet<PathBuf> = files.iter().cloned().collect();
        sync_staging(&self.staging)?;
        // From here on no check of the signal flag: the moves are quick, and stopping half-way
        // would leave a mixed directory.
        for rel in &files {
            let to = self.target.join(rel);
            if let Some(parent) = to.parent() {
                std::fs::create_dir_all(parent)
                    .map_err(ExportError::io(parent, "cannot create directory"))?;
            }
            std::fs::rename(self.staging.join(rel), &to)
                .map_err(ExportError::io(&to, "cannot move into place"))?;
        }
        let manifest = self.manifest_path();
        for old in read_manifest(&manifest) {
            if !written.contains(&old) {
                let path = self.target.join(&old);
                let _ = std::fs::remove_file(&path);
                remove_empty_parents(&self.target, &path);
            }
        }
        let mut text = String::new();
        for rel in &files {
            text.push_str(&rel.to_string_lossy());
            text.push('\n');
        }
        write_atomic_uninterrupted(&manifest, text.as_bytes())?;
        let _ = std::fs::remove_dir_all(&self.staging);
        sync_dir(&self.target);
        self.committed = true;
        Ok(files.into_iter().map(|r| self.target.join(r)).collect())
    }

    fn manifest_path(&self) -> PathBuf {
        self.target
            .join(format!(".plancache-{}.manifest", self.kind))
    }
}

impl Drop for OutputDir {
    fn drop(&mut self) {
        if self.committed {
            return;
        }
        let _ = std::fs::remove_dir_all(&self.staging);
        if self.created_target {
            // Only succeeds when empty.
            let _ = std::fs::remove_dir(&self.target);
        }
    }
}

/// Relative paths of the regular files under `dir`, sorted; temporary files of interrupted
/// atomic writes are skipped.
fn list_files(root: &Path, rel: &Path, out: &mut Vec<PathBuf>) -> Result<(), ExportError> {
    let dir = root.join(rel);
    let mut entries: Vec<_> = std::fs::read_dir(&dir)
        .map_err(ExportError::io(&dir, "cannot list"))?
        .filter_map(Result::ok)
        .collect();
    entries.sort_by_key(|e| e.file_name());
    for e in entries {
        let name = e.file_name();
        let child = rel.join(&name);
        let Ok(kind) = e.file_type() else { continue };
        if kind.is_dir() {
            list_files(root, &child, out)?;
        } else if kind.is_file() && !name.to_string_lossy().contains(".tmp-") {
            out.push(child);
        }
    }
    Ok(())
}

/// The relative paths a manifest lists; anything that could leave the directory is ignored.
fn read_manifest(path: &Path) -> Vec<PathBuf> {
    let Ok(text) = std::fs::read_to_string(path) else {
        return Vec::new();
    };
    text.lines()
        .map(PathBuf::from)
        .filter(|p| {
            !p.as_os_str().is_empty() && p.components().all(|c| matches!(c, Component::Normal(_)))
        })
        .collect()
}

/// Removes the now-empty directories between `file` and `root` (e.g. `charts/`).
fn remove_empty_parents(root: &Path, file: &Path) {
    let mut dir = file.parent();
    while let Some(d) = dir {
        if d == root || std::fs::remove_dir(d).is_err() {
            break;
        }
        dir = d.parent();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commit_replaces_files_and_removes_stale_ones_of_the_same_kind_only() {
        let tmp = tempfile::tempdir().unwrap();
        let out = tmp.path().join("out");
        std::fs::create_dir_all(&out).unwrap();
        std::fs::write(out.join("mine.txt"), "user file").unwrap();
        let run = OutputDir::begin(&out, "report").unwrap();
        std::fs::create_dir_all(run.path().join("charts")).unwrap();
        std::fs::write(run.path().join("charts/a.svg"), "a1").unwrap();
        std::fs::write(run.path().join("charts/b.svg"), "b1").unwrap();
        std::fs::write(run.path().join("report.md"), "r1").unwrap();
        run.commit().unwrap();
        let run = OutputDir::begin(&out, "report").unwrap();
        std::fs::create_dir_all(run.path().join("charts")).unwrap();
        std::fs::write(run.path().join("charts/a.svg"), "a2").unwrap();
        std::fs::write(run.path().join("report.md"), "r2").unwrap();
        let written = run.commit().unwrap();
        assert_eq!(written.len(), 2);
        assert_eq!(
            std::fs::read_to_string(out.join("charts/a.svg")).unwrap(),
            "a2"
        );
        assert!(!out.join("charts/b.svg").exists(), "stale chart removed");
        assert_eq!(
            std::fs::read_to_string(out.join("mine.txt")).unwrap(),
            "user file"
        );
        let names: Vec<String> = std::fs::read_dir(&out)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| n.contains("staging"))
            .collect();
        assert!(names.is_empty(), "{names:?}");
    }

    #[test]
    fn a_dropped_run_leaves_the_previous_output() {
        let tmp = tempfile::tempdir().unwrap();
        let out = tmp.path().join("out");
        let run = OutputDir::begin(&out, "sweep").unwrap();
        std::fs::write(run.path().join("sweep.csv"), "old").unwrap();
        run.commit().unwrap();
        let run = OutputDir::begin(&out, "sweep").unwrap();
        std::fs::write(run.path().join("sweep.csv"), "new").unwrap();
        drop(run);
        assert_eq!(
            std::fs::read_to_string(out.join("sweep.csv")).unwrap(),
            "old"
        );
        assert_eq!(
            std::fs::read_dir(&out).unwrap().count(),
            2,
            "csv + manifest"
        );
        // A failed first run leaves no directory behind.
        let fresh = tmp.path().join("fresh");
        drop(OutputDir::begin(&fresh, "sweep").unwrap());
        assert!(!fresh.exists());
    }
}
