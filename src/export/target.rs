//! Where an output may go, decided before any work (issue 19, item 1): every output is a regular
//! file, a directory plancache creates or already owns, or a stream (a character device such as
//! `/dev/null` or `/dev/stdout`, a FIFO, anything under `/dev` or `/proc`) that is written
//! *through*. Nothing else (a socket, a block device, a symlink loop) is ever replaced by the
//! write-and-rename: it is refused with exit 2. An output that names one of the run's inputs, or
//! two outputs that name one file, are refused too.
//!
//! One check for every command ([`check_outputs`]); [`super::write_atomic_with`] follows the same
//! classification ([`file_target`]) when it writes, so a library caller gets the same protection.

use std::os::unix::fs::{FileTypeExt, MetadataExt};
use std::path::{Path, PathBuf};

/// What an output flag names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OutputKind {
    /// One file (`--export-csv F`, `import --out F`, ...).
    File,
    /// A directory of files (`report --out D`, `validate --out D`, ...).
    Dir,
}

/// One output of a command, as given on the command line.
#[derive(Debug, Clone)]
pub struct Output<'a> {
    /// The flag that named it, for the message (`--export-csv`).
    pub flag: &'a str,
    /// The path as given.
    pub path: &'a Path,
    /// File or directory.
    pub kind: OutputKind,
}

/// How a file output is written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FileTarget {
    /// A new or regular file: written to a temporary file beside it and renamed into place.
    /// The path is the one to rename onto (a symlink to a regular file is followed, so the link
    /// stays a link).
    Replace(PathBuf),
    /// A device, a FIFO or a file reached through `/dev` or `/proc`: opened and written through
    /// (appending), never replaced.
    Stream(PathBuf),
}

/// An output that must not be written.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum OutputPathError {
    /// The path exists and is something plancache must not replace or write into.
    #[error("{flag} {path}: {what}; plancache writes only regular files, directories it creates, or streams (a character device or a FIFO)\n  hint: {hint}")]
    Unwritable {
        /// The flag.
        flag: String,
        /// The path as given.
        path: String,
        /// What it is (`is a socket`).
        what: String,
        /// The way out.
        hint: String,
    },
    /// A directory output given `-`.
    #[error("{flag} takes a directory, not `-`\n  hint: {hint}")]
    DashForDir {
        /// The flag.
        flag: String,
        /// What to use instead.
        hint: String,
    },
    /// A directory output that exists and is not a directory.
    #[error(
        "{flag} {path}: {what}\n  hint: {flag} names a directory for the output files; {hint}"
    )]
    NotADir {
        /// The flag.
        flag: String,
        /// The path as given.
        path: String,
        /// What it is.
        what: String,
        /// What to use instead.
        hint: String,
    },
    /// The output is one of the inputs.
    #[error("{flag} {path}: is also an input of this run ({input}); writing it would replace what is being read\n  hint: write the output to another file")]
    IsInput {
        /// The flag.
        flag: String,
        /// The path as given.
        path: String,
        /// The input as given.
        input: String,
    },
    /// Two outputs name one file.
    #[error("{flag} {path} and {other_flag} {other_path} name one file; the second would replace the first\n  hint: give each output its own file")]
    Doubled {
        /// The first flag.
        flag: String,
        /// Its path.
        path: String,
        /// The second flag.
        other_flag: String,
        /// Its path.
        other_path: String,
    },
}

/// Under these, a path is a stream or a kernel file: never renamed onto.
fn under_system_dir(p: &Path) -> bool {
    p.starts_with("/dev") || p.starts_with("/proc")
}

/// How a file output at `path` is written, or why it cannot be. `path` must not be `-`.
pub fn file_target(flag: &str, path: &Path) -> Result<FileTarget, OutputPathError> {
    let bad = |what: &str, hint: &str| OutputPathError::Unwritable {
        flag: flag.into(),
        path: path.display().to_string(),
        what: what.into(),
        hint: hint.into(),
    };
    let Ok(link) = std::fs::symlink_metadata(path) else {
        return Ok(FileTarget::Replace(path.to_path_buf()));
    };
    let meta = match std::fs::metadata(path) {
        Ok(m) => m,
        Err(e) if link.file_type().is_symlink() => {
            // A dangling link is created through (its target does not exist yet); a loop is not.
            return match std::fs::canonicalize(path.parent().unwrap_or(Path::new(".")))
                .ok()
                .zip(std::fs::read_link(path).ok())
            {
                Some((parent, to)) if e.kind() == std::io::ErrorKind::NotFound => {
                    Ok(FileTarget::Replace(parent.join(to)))
                }
                _ => Err(bad(
                    &format!("is a symlink that cannot be followed ({e})"),
                    "remove the link or give another file",
                )),
            };
        }
        Err(e) => return Err(bad(&format!("cannot be read ({e})"), "give another file")),
    };
    let ft = meta.file_type();
    let resolved = std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
    if ft.is_dir() {
        return Err(bad(
            "is a directory",
            "give a file name, or `-` for standard output",
        ));
    }
    if ft.is_char_device() || ft.is_fifo() {
        return Ok(FileTarget::Stream(path.to_path_buf()));
    }
    if ft.is_socket() || ft.is_block_device() || !ft.is_file() {
        let what = if ft.is_socket() {
            "is a socket"
        } else if ft.is_block_device() {
            "is a block device"
        } else {
            "is not a regular file"
        };
        return Err(bad(what, "give a regular file, or `-` for standard output"));
    }
    if under_system_dir(path) || under_system_dir(&resolved) {
        // `/dev/stdout` or `/proc/self/fd/1` redirected to a regular file: the shell's stream.
        return Ok(FileTarget::Stream(path.to_path_buf()));
    }
    Ok(FileTarget::Replace(resolved))
}

/// Checks a directory output: `-` and anything that exists and is not a directory are refused.
fn check_dir(flag: &str, path: &Path, hint: &str) -> Result<(), OutputPathError> {
    let bad = |what: String| OutputPathError::NotADir {
        flag: flag.into(),
        path: path.display().to_string(),
        what,
        hint: hint.into(),
    };
    if path.as_os_str() == "-" {
        return Err(OutputPathError::DashForDir {
            flag: flag.into(),
            hint: hint.into(),
        });
    }
    match std::fs::metadata(path) {
        Ok(m) if m.is_dir() => Ok(()),
        Ok(_) => Err(bad("exists and is not a directory".into())),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            if std::fs::symlink_metadata(path).is_ok() {
                return Err(bad(format!("is a symlink that cannot be followed ({e})")));
            }
            Ok(())
        }
        Err(e) => Err(bad(format!("cannot be read ({e})"))),
    }
}

/// The identity of an existing file (device and inode), or its absolute path when it does not
/// exist yet.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Identity {
    Inode(u64, u64),
    Path(PathBuf),
}

fn identity(p: &Path) -> Identity {
    match std::fs::metadata(p) {
        Ok(m) => Identity::Inode(m.dev(), m.ino()),
        Err(_) => {
            let parent = p.parent().filter(|d| !d.as_os_str().is_empty());
            let parent = std::fs::canonicalize(parent.unwrap_or(Path::new(".")));
            match (parent, p.file_name()) {
                (Ok(d), Some(name)) => Identity::Path(d.join(name)),
                _ => Identity::Path(std::path::absolute(p).unwrap_or_else(|_| p.to_path_buf())),
            }
        }
    }
}

/// Checks every output of a command before any work: each is writable in its kind (`dir_hint`
/// says what a directory output takes instead of `-` or a file), none names an input, and no two
/// name one file. `-` (standard output) of a file output is left to the caller.
pub fn check_outputs(
    outputs: &[Output<'_>],
    inputs: &[PathBuf],
    dir_hint: &str,
) -> Result<(), OutputPathError> {
    let mut files: Vec<(&Output<'_>, Identity)> = Vec::new();
    for o in outputs {
        if o.kind == OutputKind::Dir {
            check_dir(o.flag, o.path, dir_hint)?;
            continue;
        }
        if o.path.as_os_str() == "-" {
            continue;
        }
        let target = file_target(o.flag, o.path)?;
        let is_device = std::fs::metadata(o.path).is_ok_and(|m| m.file_type().is_char_device());
        if let FileTarget::Replace(_) = target {
            let id = identity(o.path);
            if let Some(input) = inputs.iter().find(|i| identity(i) == id) {
                return Err(OutputPathError::IsInput {
                    flag: o.flag.into(),
                    path: o.path.display().to_string(),
                    input: input.display().to_string(),
                });
            }
        }
        if is_device {
            // `/dev/null` twice is harmless, as in a shell.
            continue;
        }
        let id = identity(o.path);
        if let Some((first, _)) = files.iter().find(|(_, other)| *other == id) {
            return Err(OutputPathError::Doubled {
                flag: first.flag.into(),
                path: first.path.display().to_string(),
                other_flag: o.flag.into(),
                other_path: o.path.display().to_string(),
            });
        }
        files.push((o, id));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn devices_and_fifos_are_streams_sockets_are_refused() {
        assert_eq!(
            file_target("--out", Path::new("/dev/null")).unwrap(),
            FileTarget::Stream("/dev/null".into())
        );
        let tmp = tempfile::tempdir().unwrap();
        let fifo = tmp.path().join("f");
        let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
        // SAFETY: mkfifo on a path we own.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        assert_eq!(
            file_target("--out", &fifo).unwrap(),
            FileTarget::Stream(fifo.clone())
        );
        let sock = tmp.path().join("s");
        let _l = std::os::unix::net::UnixListener::bind(&sock).unwrap();
        let e = file_target("--out", &sock).unwrap_err().to_string();
        assert!(e.contains("is a socket"), "{e}");
        // A symlink to a regular file is followed: the rename lands on the file.
        let real = tmp.path().join("real.csv");
        std::fs::write(&real, "x").unwrap();
        let link = tmp.path().join("link.csv");
        std::os::unix::fs::symlink(&real, &link).unwrap();
        assert_eq!(
            file_target("--out", &link).unwrap(),
            FileTarget::Replace(std::fs::canonicalize(&real).unwrap())
        );
        // A loop is refused.
        let a = tmp.path().join("a");
        let b = tmp.path().join("b");
        std::os::unix::fs::symlink(&a, &b).unwrap();
        std::os::unix::fs::symlink(&b, &a).unwrap();
        assert!(file_target("--out", &a).is_err());
    }

    #[test]
    fn an_input_or_a_doubled_path_is_refused() {
        let tmp = tempfile::tempdir().unwrap();
        let t = tmp.path().join("t.jsonl");
        std::fs::write(&t, "{}").unwrap();
        let out = |flag, path| Output {
            flag,
            path,
            kind: OutputKind::File,
        };
        let e = check_outputs(&[out("--out", &t)], std::slice::from_ref(&t), "")
            .unwrap_err()
            .to_string();
        assert!(e.contains("is also an input"), "{e}");
        let f = tmp.path().join("new.json");
        let g = tmp.path().join(".").join("new.json");
        let e = check_outputs(
            &[out("--export-json", &f), out("--export-csv", &g)],
            &[],
            "",
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("name one file"), "{e}");
        let null = Path::new("/dev/null");
        check_outputs(
            &[out("--export-json", null), out("--export-csv", null)],
            &[],
            "",
        )
        .unwrap();
    }
}
