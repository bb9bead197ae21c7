//! The one way to read and change a file on a node; every step's writes go through it.
//!
//! A write follows symbolic links and replaces the real target (a link stays a link),
//! keeps that file's owner, group and mode (and, where `cp` can copy them, its ACLs,
//! extended attributes and SELinux context) (a new file gets the caller's mode: 0644, or
//! 0600 when it holds a secret; an existing file that holds a secret loses its group and
//! other bits), writes the exact bytes to a temporary file in the same directory and
//! renames it over the target, so readers see the old file or the new one. It refuses
//! to write when the file changed since it was read (compare-and-swap on its digest)
//! and keeps the previous content as a before-image in a root-only directory.
//! Directories that must be private (staging, secrets, before-images) are created
//! root-owned 0700, as is every directory made on the way to one (`/var/tmp/cuda-upgrade`
//! for its `wheels`), made 0700 when others may read them, and refused when another
//! user owns them or others may write to them,
//! or when any directory above them could be changed by another user (a symlink planted
//! in `/var/tmp` leads to a directory that is checked by its real path).
//!
//! A read is exact bytes; a file that cannot be read is an error, never an empty file.
//! This module decides nothing about what to write (the steps do).

use std::path::{Path, PathBuf};

use super::{NodeCommand, Stdin, Transport, TransportError};

/// Where the previous content of every rewritten file is kept, by its sha256, root-only.
pub const BEFORE_IMAGES_DIR: &str = "/var/lib/cuda-upgrade/before-images";

/// What the file must be when the write starts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Expected {
    /// Whatever it is (a whole-file write).
    Any,
    /// It must not exist.
    Absent,
    /// It must have exactly this content, by its sha256 in hex (what was read before).
    Sha256(String),
}

/// How a file is written, e.g. `/etc/ld.so.conf.d/cuda-13-0.conf`, new files 0644.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WriteSpec {
    /// The path as named; a symlink is followed to its real target.
    pub path: PathBuf,
    /// The mode of a new file, e.g. `0o644` (an existing file keeps its own).
    pub new_mode: u32,
    /// The content is secret: a new file is created private and an existing one loses
    /// its group and other permission bits.
    pub secret: bool,
    /// The directory must be private: root-owned 0700 when created, refused when another
    /// user owns it or group or others may write to it (staging and secret directories).
    pub private_directory: bool,
    /// What the file must be when the write starts.
    pub expected: Expected,
    /// Where the previous content is kept (root-only), e.g. [`BEFORE_IMAGES_DIR`];
    /// `None` keeps none.
    pub before_images: Option<PathBuf>,
}

impl WriteSpec {
    /// A whole-file write of `path`, new files `new_mode`, in a directory created when
    /// missing.
    pub fn new(path: impl Into<PathBuf>, new_mode: u32) -> Self {
        Self {
            path: path.into(),
            new_mode,
            secret: false,
            private_directory: false,
            expected: Expected::Any,
            before_images: Some(PathBuf::from(BEFORE_IMAGES_DIR)),
        }
    }
}

/// What a write did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Written {
    /// The file that was replaced, e.g. `/etc/python3.12/sitecustomize.py` for the link
    /// `/usr/lib/python3.12/sitecustomize.py`.
    pub real_path: PathBuf,
    /// The sha256 of the previous content, kept as `<before_images>/<sha256>`; `None`
    /// when the file was new (or no before-image was asked for).
    pub before_image: Option<String>,
    /// The sha256 of the content written, e.g. for a rollback to check that nobody
    /// changed the file since.
    pub after: String,
}

/// A file's content as read from a node.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FileContent {
    /// No file there (a dangling link counts as none; a write creates its target).
    Absent,
    /// The file's exact bytes.
    Present(Vec<u8>),
}

/// The read script: `absent` or `present` on the first line, then the exact bytes.
const READ_SCRIPT: &str = r#"set -eu
path=$1
if [ ! -e "$path" ]; then
    printf 'absent\n'
    exit 0
fi
target=$(readlink -f -- "$path")
if [ ! -f "$target" ]; then
    printf '`%s` is not a regular file\n' "$target" >&2
    exit 3
fi
printf 'present\n'
exec cat -- "$target"
"#;

/// The shell function every script of the tool hashes a node's files with:
/// `sha256_of FILE SIZE` prints FILE's sha256 in hex. A file of 4 MiB or more goes
/// through OpenSSL where it is installed: it uses the CPU's SHA instructions and hashes
/// several times faster than coreutils' `sha256sum` (a 4 GB runfile, a 900 MB wheel);
/// below that its start costs more than it saves. What OpenSSL does not answer with a
/// digest is hashed by `sha256sum`.
macro_rules! sha256_function {
    () => {
        r#"sha256_of() {
    if [ "${2:-0}" -ge 4194304 ] && command -v openssl >/dev/null 2>&1; then
        sha256_sum=$(openssl dgst -sha256 -r -- "$1" 2>/dev/null) || sha256_sum=
        sha256_sum=${sha256_sum%% *}
        case $sha256_sum in
            *[!0-9a-f]*) ;;
            ????????????????????????????????????????????????????????????????)
                printf '%s\n' "$sha256_sum"
                return 0 ;;
        esac
    fi
    sha256_sum=$(sha256sum -- "$1") || return 1
    printf '%s\n' "${sha256_sum%% *}"
}
"#
    };
}

/// The held script: `DIGEST  FILE` for each of its arguments that is a regular file, as
/// `sha256sum` prints it (one `stat` for the sizes, one `sha256sum` for the small files).
const HELD_SCRIPT: &str = concat!(
    sha256_function!(),
    r#"count=$#
for file do
    [ -f "$file" ] && set -- "$@" "$file"
done
shift "$count"
[ "$#" -gt 0 ] || exit 0
sizes=$(stat -L -c '%s' -- "$@")
count=$#
for file do
    size=${sizes%%[!0-9]*}
    sizes=${sizes#"$size"}
    sizes=${sizes#?}
    if [ "$size" -ge 4194304 ] && sum=$(sha256_of "$file" "$size"); then
        printf '%s  %s\n' "$sum" "$file"
    else
        set -- "$@" "$file"
    fi
done
shift "$count"
[ "$#" -eq 0 ] || exec sha256sum -- "$@"
"#
);

/// The write script; see the module's documentation.
const WRITE_SCRIPT: &str = concat!(
    sha256_function!(),
    r#"set -eu
umask 022
self=$(id -u)
group=
# The private directories checked so far in this run, and the directories found safe,
# one a line: a batch checks each once.
checked="
"
safe="
"
# The last file's directory as named and as resolved, and the last before-images
# directory as named and as resolved: files of one directory resolve it once.
last_parent= last_real= images_named= images_real=
# The files received so far, those already in place, and the files created.
count=0 received=0 finished=0 finishing=
newline="
"
# fail MESSAGE: the files received before this one are put in place (a batch stops at
# the file that failed), then MESSAGE goes to stderr and the script exits 3.
fail() {
    if [ -z "$finishing" ]; then
        finishing=1
        finish
    fi
    printf '%s\n' "$*" >&2
    exit 3
}
# up PATH: sets `up` to the directory above PATH (absolute and canonical), as `dirname`
# would, without starting a process.
up() {
    up=${1%/*}
    [ -n "$up" ] || up=/
}
# safe_dir DIR: DIR (canonical) and every directory above it belong to root or to us and
# nobody else may write to them (a sticky directory such as /var/tmp is safe): then no
# other user can swap anything on the way to DIR.
safe_dir() {
    dir=$1
    while :; do
        case $safe in *"
$dir
"*) return 0 ;; esac
        owner_mode=$(stat -c '%u %a' -- "$dir") || fail "cannot inspect \`$dir\`"
        owner=${owner_mode% *}
        dir_mode=${owner_mode#* }
        case $owner in
            0|"$self") ;;
            *) fail "refusing \`$dir\`: it is owned by uid $owner; remove it or let root own it" ;;
        esac
        if [ $(( 0$dir_mode & 022 )) -ne 0 ] && [ $(( 0$dir_mode & 01000 )) -eq 0 ]; then
            fail "refusing \`$dir\`: its mode $dir_mode lets other users write to it"
        fi
        safe="$safe$dir
"
        [ "$dir" = / ] && return 0
        up "$dir"
        dir=$up
    done
}
# private_dir DIR: DIR (canonical) is ours alone: created 0700 when missing (and so is
# every directory created on the way to it, e.g. `/var/tmp/cuda-upgrade` for its
# `wheels`), made 0700 when others may read or enter it, refused when another user owns
# it or others may write to it, and safe all the way up.
private_dir() {
    case $checked in *"
$1
"*) return 0 ;; esac
    existing=$1
    while [ ! -e "$existing" ]; do
        up "$existing"
        existing=$up
    done
    if [ "$existing" != "$1" ]; then
        # Nothing is created below a directory another user could change.
        safe_dir "$existing"
        (umask 077 && mkdir -p -- "$1") || fail "cannot create \`$1\`"
    fi
    [ -d "$1" ] || fail "refusing \`$1\`: it is not a directory"
    owner_mode=$(stat -c '%u %a' -- "$1")
    owner=${owner_mode% *}
    dir_mode=${owner_mode#* }
    [ "$owner" = "$self" ] || fail "refusing \`$1\`: it is owned by uid $owner, not by uid $self; remove it or let root own it"
    [ $(( 0$dir_mode & 022 )) -eq 0 ] || fail "refusing \`$1\`: its mode $dir_mode lets other users write to it"
    if [ $(( 0$dir_mode & 077 )) -ne 0 ]; then
        chmod go= -- "$1" || fail "cannot make \`$1\` private"
    fi
    up "$1"
    safe_dir "$up"
    checked="$checked$1
"
}
# canonical PATH: PATH with every symbolic link resolved, missing components kept.
canonical() {
    readlink -m -- "$1" 2>/dev/null || realpath -m -- "$1" 2>/dev/null ||
        python3 -c 'import os, sys; print(os.path.realpath(sys.argv[1]))' "$1"
}
# write_one PATH NEW_MODE SECRET PRIVATE EXPECTED IMAGES SIZE: one file from stdin (SIZE
# bytes of it, or all of it when SIZE is empty).
write_one() {
path=$1 new_mode=$2 secret=$3 private=$4 expected=$5 images=$6 size=$7
# Every symbolic link on the way is followed: the real target is replaced, links stay.
# A file that is no link, in the directory the last one was in, is that directory's
# real path and its name.
target=
name=${path##*/}
case $path:$name in
    /*:|/*:.|/*:..) ;;
    /*) if [ "${path%/*}" = "$last_parent" ] && [ -n "$last_real" ] && [ ! -L "$path" ]; then
            target=${last_real%/}/$name
        fi ;;
esac
if [ -z "$target" ]; then
    target=$(canonical "$path") || fail "cannot resolve \`$path\`"
    [ -n "$target" ] || fail "cannot resolve \`$path\`"
    case $path:$name in
        /*:|/*:.|/*:..) last_real= ;;
        /*) if [ -L "$path" ]; then last_real=; else last_parent=${path%/*}; up "$target"; last_real=$up; fi ;;
        *) last_real= ;;
    esac
fi
up "$target"
directory=$up
if [ "$private" = 1 ]; then
    private_dir "$directory"
else
    mkdir -p -- "$directory"
fi
before=
if [ -e "$target" ]; then
    [ -f "$target" ] || fail "\`$target\` is not a regular file"
    stat_line=$(stat -c '%u %g %a %s' -- "$target")
    uid=${stat_line%% *}
    rest=${stat_line#* }
    gid=${rest%% *}
    rest=${rest#* }
    mode=${rest% *}
    current=$(sha256_of "$target" "${rest#* }")
    case $expected in
        any|"$current") ;;
        *) fail "\`$target\` changed since it was read; nothing was written" ;;
    esac
    if [ "$secret" = 1 ]; then
        mode=$(printf '%o' $(( 0$mode & 07700 )))
    fi
    if [ -n "$images" ]; then
        if [ "$images" != "$images_named" ] || [ -z "$images_real" ]; then
            images_named=$images
            images_real=$(canonical "$images")
        fi
        images=$images_real
        private_dir "$images"
        if [ ! -e "$images/$current" ]; then
            (umask 077 && cp -- "$target" "$images/.$current.tmp" && mv -f -- "$images/.$current.tmp" "$images/$current")
        fi
        before=$current
    fi
else
    case $expected in
        any|absent) ;;
        *) fail "\`$target\` no longer exists since it was read; nothing was written" ;;
    esac
    uid=$self
    [ -n "$group" ] || group=$(id -g)
    gid=$group
    mode=$new_mode
fi
# The temporary file beside the target: in a private directory (ours alone) it is named
# for this run and created exclusively (noclobber), without a `mktemp`.
temporary=
count=$((count + 1))
if [ "$private" = 1 ]; then
    # Created with the file's mode where it has no execute bits, so no `chmod` follows.
    masked=$(( 0777 & ~0$mode ))
    umask "$(( (masked >> 6) & 7 ))$(( (masked >> 3) & 7 ))$(( masked & 7 ))"
    set -C
    if command : 2>/dev/null >"$directory/.cuda-upgrade.$$.$count"; then
        temporary=$directory/.cuda-upgrade.$$.$count
    fi
    set +C
    umask 022
fi
[ -n "$temporary" ] || temporary=$(mktemp -- "$directory/.cuda-upgrade.XXXXXX")
eval "temporary_$count=\$temporary"
if [ -e "$target" ] && [ "$secret" != 1 ]; then
    # ACLs, extended attributes and the SELinux context of the file it replaces.
    cp --attributes-only --preserve=mode,ownership,xattr,context -- "$target" "$temporary" 2>/dev/null ||
        cp --attributes-only --preserve=mode,ownership,xattr -- "$target" "$temporary" 2>/dev/null || true
fi
if [ -n "$size" ]; then
    # GNU head reads no byte past the count: the next file's bytes stay on stdin.
    head -c "$size" >"$temporary"
else
    cat >"$temporary"
fi
eval "target_$count=\$target owner_$count=\$uid:\$gid mode_$count=\$mode size_$count=\$size before_$count=\$before"
received=$count
}
# finish: puts every received file in place, in order, and prints `wrote` for each:
# one `stat` checks their sizes, owners and modes (a `chown` or `chmod` only for a file
# that differs), one `sha256sum` hashes the small ones, one `sync` flushes them all;
# then each is renamed over its target. A file that arrived short stops the batch there.
finish() {
    [ "$received" -gt "$finished" ] || return 0
    set --
    i=$((finished + 1))
    while [ "$i" -le "$received" ]; do
        eval "set -- \"\$@\" \"\$temporary_$i\""
        i=$((i + 1))
    done
    lines=$(stat -c '%s %u:%g %a' -- "$@") || fail "cannot inspect the files written"
    lines="$lines
"
    set --
    i=$((finished + 1))
    while [ "$i" -le "$received" ]; do
        line=${lines%%"$newline"*}
        lines=${lines#*"$newline"}
        eval "temporary=\$temporary_$i want_owner=\$owner_$i want_mode=\$mode_$i want_size=\$size_$i"
        got_size=${line%% *}
        rest=${line#* }
        got_owner=${rest% *}
        got_mode=${rest#* }
        # A `chown` clears set-user-ID and set-group-ID bits: the mode is set again after one.
        owned=
        if [ -n "$want_size" ] && [ "$got_size" != "$want_size" ]; then
            eval "problem_$i=short"
        elif [ "$got_owner" != "$want_owner" ] && ! { chown -- "$want_owner" "$temporary" && owned=1; }; then
            eval "problem_$i=owner"
        elif { [ -n "$owned" ] || [ $((0$got_mode)) -ne $((0$want_mode)) ]; } &&
            ! chmod -- "$want_mode" "$temporary"; then
            eval "problem_$i=mode"
        fi
        if [ "$got_size" -ge 4194304 ] && sum=$(sha256_of "$temporary" "$got_size"); then
            eval "after_$i=\$sum"
        else
            set -- "$@" "$temporary"
            eval "pending_$#=$i"
        fi
        i=$((i + 1))
    done
    if [ "$#" -gt 0 ]; then
        sums=$(sha256sum -- "$@") || fail "cannot hash the files written"
        sums="$sums
"
        j=1
        while [ "$j" -le "$#" ]; do
            line=${sums%%"$newline"*}
            sums=${sums#*"$newline"}
            line=${line#\\}
            eval "index=\$pending_$j"
            eval "after_$index=\${line%% *}"
            j=$((j + 1))
        done
    fi
    set --
    i=$((finished + 1))
    while [ "$i" -le "$received" ]; do
        eval "set -- \"\$@\" \"\$temporary_$i\""
        i=$((i + 1))
    done
    sync -- "$@" 2>/dev/null || true
    while [ "$finished" -lt "$received" ]; do
        i=$((finished + 1))
        eval "temporary=\$temporary_$i target=\$target_$i before=\$before_$i after=\$after_$i"
        eval "problem=\${problem_$i:-} want_owner=\$owner_$i want_mode=\$mode_$i"
        case $problem in
            short) fail "\`$target\`: the input ended early; nothing was written" ;;
            owner) fail "\`$target\`: cannot give the new file the owner $want_owner; nothing was written" ;;
            mode) fail "\`$target\`: cannot give the new file the mode $want_mode; nothing was written" ;;
        esac
        mv -f -- "$temporary" "$target"
        finished=$i
        printf 'wrote\t%s\t%s\t%s\n' "$target" "$before" "$after"
    done
}
# cleanup: removes the temporary files not put in place (on any exit).
cleanup() {
    set --
    i=$((finished + 1))
    while [ "$i" -le "$count" ]; do
        eval "set -- \"\$@\" \"\$temporary_$i\""
        i=$((i + 1))
    done
    [ "$#" -eq 0 ] || rm -f -- "$@"
}
trap cleanup EXIT
if [ "$1" = --batch ]; then
    # Seven arguments a file; their contents follow each other on stdin.
    shift
    while [ $# -ge 7 ]; do
        write_one "$1" "$2" "$3" "$4" "$5" "$6" "$7"
        shift 7
    done
else
    write_one "$1" "$2" "$3" "$4" "$5" "$6" ""
fi
finishing=1
finish
"#
);

/// The remove script: the real target goes only when it still has the expected digest.
const REMOVE_SCRIPT: &str = concat!(
    sha256_function!(),
    r#"set -eu
path=$1 expected=$2
target=$(readlink -m -- "$path" 2>/dev/null || realpath -m -- "$path")
if [ ! -e "$target" ]; then
    printf 'absent\n'
    exit 0
fi
[ -f "$target" ] || { printf '`%s` is not a regular file\n' "$target" >&2; exit 3; }
case $expected in
    any) ;;
    "$(sha256_of "$target" "$(stat -c '%s' -- "$target")")") ;;
    *) printf '`%s` changed since it was written; it was kept\n' "$target" >&2; exit 3 ;;
esac
rm -f -- "$target"
printf 'removed\n'
"#
);

impl Transport {
    /// Remove the file `path` names (its real target; a link stays), only when its
    /// content still has the digest `expected` (`Expected::Any`: whatever it holds).
    /// A file already gone is fine.
    pub async fn remove_file(
        &self,
        path: &Path,
        expected: &Expected,
    ) -> Result<(), TransportError> {
        let expected = match expected {
            Expected::Sha256(digest) => digest.clone(),
            Expected::Any | Expected::Absent => "any".to_string(),
        };
        let command = NodeCommand::new("sh")
            .arg("-c")
            .script("remove-file", REMOVE_SCRIPT)
            .arg("remove-file")
            .arg(path.display().to_string())
            .arg(expected);
        let output = self.run(&command, None).await?;
        if output.success() {
            Ok(())
        } else {
            Err(TransportError::WriteFile {
                host: self.name().to_string(),
                path: path.display().to_string(),
                message: output.tail(5),
            })
        }
    }

    /// The sha256 of each of `paths` that is a regular file on the node (through its
    /// symlinks), by path: one command for all of them. A missing or unreadable file is
    /// simply not in the answer.
    pub async fn sha256_of_files(
        &self,
        paths: &[&Path],
    ) -> Result<std::collections::HashMap<PathBuf, String>, TransportError> {
        if paths.is_empty() {
            return Ok(std::collections::HashMap::new());
        }
        let command = NodeCommand::new("sh")
            .arg("-c")
            .script("held", HELD_SCRIPT)
            .arg("held")
            .args(paths.iter().map(|path| path.display().to_string()));
        // A file that vanished or could not be read meanwhile is simply not in the
        // answer: whoever asks sends it again.
        let output = self.run(&command, None).await?;
        Ok(output
            .stdout_text()
            .lines()
            .filter_map(|line| {
                let (digest, path) = line.split_once("  ")?;
                Some((PathBuf::from(path), digest.to_string()))
            })
            .collect())
    }

    /// Read `path` (through its symlinks) as exact bytes; [`FileContent::Absent`] when
    /// there is no file. Anything else that stops the read is an error.
    pub async fn read_file(&self, path: &Path) -> Result<FileContent, TransportError> {
        let command = NodeCommand::new("sh")
            .arg("-c")
            .script("read-file", READ_SCRIPT)
            .arg("read-file")
            .arg(path.display().to_string());
        let output = self.run(&command, None).await?;
        let failed = |message: String| TransportError::ReadFile {
            host: self.name().to_string(),
            path: path.display().to_string(),
            message,
        };
        if !output.success() {
            return Err(failed(format!(
                "exit status {:?}: {}",
                output.status,
                output.tail(5)
            )));
        }
        let Some(newline) = output.stdout.iter().position(|byte| *byte == b'\n') else {
            return Err(failed("the read printed nothing".to_string()));
        };
        match &output.stdout[..newline] {
            b"absent" => Ok(FileContent::Absent),
            b"present" => Ok(FileContent::Present(output.stdout[newline + 1..].to_vec())),
            other => Err(failed(format!(
                "unexpected answer `{}`",
                String::from_utf8_lossy(other)
            ))),
        }
    }

    /// Write `content` as `spec` says (see the module's documentation).
    pub async fn write_file(
        &self,
        content: Stdin<'_>,
        spec: &WriteSpec,
    ) -> Result<Written, TransportError> {
        let command = NodeCommand::new("sh")
            .arg("-c")
            .script("write-file", WRITE_SCRIPT)
            .arg("write-file")
            .args(spec_args(spec))
            // A streamed file (a runfile of gigabytes) may take long over a slow link.
            .bounded(match content {
                Stdin::File(_) | Stdin::Chain(_) => super::INSTALL_BOUND,
                Stdin::Null | Stdin::Bytes(_) => super::DEFAULT_BOUND,
            });
        let output = self.run_with(&command, content).await?;
        let failed = |message: String| TransportError::WriteFile {
            host: self.name().to_string(),
            path: spec.path.display().to_string(),
            message,
        };
        if !output.success() {
            return Err(failed(output.tail(5)));
        }
        let text = output.stdout_text();
        let line = text.lines().last().unwrap_or_default();
        parse_written(line).ok_or_else(|| failed(format!("unexpected answer `{line}`")))
    }

    /// Write each `(content, spec)` as [`Self::write_file`] does, all in one command
    /// (one round trip, the private directories checked once): the contents follow each
    /// other on its stdin. Returns what was written, in order, and the error of the
    /// first file that could not be (the files after it are not written).
    pub async fn write_files(
        &self,
        files: &[(Stdin<'_>, &WriteSpec)],
    ) -> (Vec<Written>, Result<(), TransportError>) {
        match files {
            [] => return (Vec::new(), Ok(())),
            [(content, spec)] => {
                return match self.write_file(*content, spec).await {
                    Ok(written) => (vec![written], Ok(())),
                    Err(error) => (Vec::new(), Err(error)),
                };
            }
            _ => {}
        }
        let mut command = NodeCommand::new("sh")
            .arg("-c")
            .script("write-file", WRITE_SCRIPT)
            .arg("write-file")
            .arg("--batch")
            .bounded(super::INSTALL_BOUND);
        for (content, spec) in files {
            let size = match content {
                Stdin::Null => Ok(0),
                Stdin::Bytes(bytes) => Ok(bytes.len() as u64),
                Stdin::File(path) => std::fs::metadata(path).map(|meta| meta.len()),
                Stdin::Chain(_) => Err(std::io::Error::other("a nested input")),
            };
            let size = match size {
                Ok(size) => size,
                Err(error) => {
                    return (
                        Vec::new(),
                        Err(TransportError::WriteFile {
                            host: self.name().to_string(),
                            path: spec.path.display().to_string(),
                            message: error.to_string(),
                        }),
                    );
                }
            };
            command = command.args(spec_args(spec)).arg(size.to_string());
        }
        let contents: Vec<Stdin<'_>> = files.iter().map(|(content, _)| *content).collect();
        let output = match self.run_with(&command, Stdin::Chain(&contents)).await {
            Ok(output) => output,
            Err(error) => return (Vec::new(), Err(error)),
        };
        let written: Vec<Written> = output
            .stdout_text()
            .lines()
            .filter_map(parse_written)
            .collect();
        let result = match files.get(written.len()) {
            None => Ok(()),
            Some((_, spec)) => Err(TransportError::WriteFile {
                host: self.name().to_string(),
                path: spec.path.display().to_string(),
                message: if output.success() {
                    "the batch ended before this file".to_string()
                } else {
                    output.tail(5)
                },
            }),
        };
        (written, result)
    }
}

/// The write script's six arguments for `spec`: path, new mode, secret, private,
/// expected content and before-images directory.
fn spec_args(spec: &WriteSpec) -> [String; 6] {
    let flag = |on: bool| if on { "1" } else { "0" }.to_string();
    [
        spec.path.display().to_string(),
        format!("{:o}", spec.new_mode),
        flag(spec.secret),
        flag(spec.private_directory),
        match &spec.expected {
            Expected::Any => "any".to_string(),
            Expected::Absent => "absent".to_string(),
            Expected::Sha256(digest) => digest.clone(),
        },
        spec.before_images
            .as_ref()
            .map(|dir| dir.display().to_string())
            .unwrap_or_default(),
    ]
}

/// `wrote<TAB>real path<TAB>before-image digest (may be empty)<TAB>digest written`.
fn parse_written(line: &str) -> Option<Written> {
    let mut fields = line.split('\t');
    match (fields.next(), fields.next(), fields.next(), fields.next()) {
        (Some("wrote"), Some(real_path), Some(before), Some(after)) => Some(Written {
            real_path: PathBuf::from(real_path),
            before_image: (!before.is_empty()).then(|| before.to_string()),
            after: after.to_string(),
        }),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::{HELD_SCRIPT, WRITE_SCRIPT};
    use std::collections::BTreeMap;
    use std::os::unix::fs::PermissionsExt;
    use std::path::Path;

    fn sha256(bytes: &[u8]) -> String {
        hex::encode(<sha2::Sha256 as sha2::Digest>::digest(bytes))
    }

    /// The held script run with `path` as PATH: digest by file, as it printed them.
    fn held(path: &str, files: &[&Path]) -> BTreeMap<String, String> {
        let output = std::process::Command::new("/bin/sh")
            .arg("-c")
            .arg(HELD_SCRIPT)
            .arg("held")
            .args(files)
            .env("PATH", path)
            .output()
            .unwrap();
        assert!(output.status.success(), "{output:?}");
        String::from_utf8(output.stdout)
            .unwrap()
            .lines()
            .map(|line| {
                let (digest, file) = line.split_once("  ").unwrap();
                (file.to_string(), digest.to_string())
            })
            .collect()
    }

    #[test]
    fn files_large_and_small_hash_as_sha256sum_with_or_without_openssl() {
        let dir = tempfile::tempdir().unwrap();
        let small = dir.path().join("small file");
        let large = dir.path().join("large.whl");
        let link = dir.path().join("link");
        let missing = dir.path().join("missing");
        let large_bytes: Vec<u8> = (0..5 * 1024 * 1024_u32).map(|i| (i % 251) as u8).collect();
        std::fs::write(&small, b"small\n").unwrap();
        std::fs::write(&large, &large_bytes).unwrap();
        std::os::unix::fs::symlink(&large, &link).unwrap();
        let want: BTreeMap<String, String> = [
            (&small, sha256(b"small\n")),
            (&large, sha256(&large_bytes)),
            (&link, sha256(&large_bytes)),
        ]
        .into_iter()
        .map(|(path, digest)| (path.display().to_string(), digest))
        .collect();
        let files = [
            small.as_path(),
            missing.as_path(),
            large.as_path(),
            link.as_path(),
        ];
        // The system's tools (OpenSSL for the large file where it is installed).
        assert_eq!(held("/usr/bin:/bin", &files), want);
        // Without OpenSSL on PATH: `sha256sum` for all of them.
        let bin = dir.path().join("bin");
        std::fs::create_dir(&bin).unwrap();
        for tool in ["sha256sum", "stat"] {
            let found = ["/usr/bin", "/bin"]
                .iter()
                .map(|dir| Path::new(dir).join(tool))
                .find(|path| path.exists())
                .unwrap();
            std::os::unix::fs::symlink(found, bin.join(tool)).unwrap();
        }
        assert_eq!(held(bin.to_str().unwrap(), &files), want);
        // An `openssl` that answers nothing usable is not trusted.
        std::fs::write(bin.join("openssl"), "#!/bin/sh\necho 'not-a-digest *x'\n").unwrap();
        std::fs::set_permissions(
            bin.join("openssl"),
            std::os::unix::fs::PermissionsExt::from_mode(0o755),
        )
        .unwrap();
        assert_eq!(held(bin.to_str().unwrap(), &files), want);
        assert!(held("/usr/bin:/bin", &[missing.as_path()]).is_empty());
    }

    /// The write script run as a batch of `(path, private)` files of one byte each.
    fn write_private(files: &[(&Path, bool)]) -> std::process::Output {
        let mut command = std::process::Command::new("/bin/sh");
        command
            .arg("-c")
            .arg(WRITE_SCRIPT)
            .arg("write-file")
            .arg("--batch");
        for (path, private) in files {
            command
                .arg(path)
                .args(["600", "0", if *private { "1" } else { "0" }, "any", "", "1"]);
        }
        let mut child = command
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        std::io::Write::write_all(&mut child.stdin.take().unwrap(), &vec![b'x'; files.len()])
            .unwrap();
        child.wait_with_output().unwrap()
    }

    fn mode(path: &Path) -> u32 {
        std::fs::metadata(path).unwrap().permissions().mode() & 0o7777
    }

    /// See: issue 33 — `--fetch controller` sends wheels to `/var/tmp/cuda-upgrade/wheels`
    /// before anything is staged in `/var/tmp/cuda-upgrade` itself, which was then made
    /// 0755 on the way: every directory created on the way to a private one is 0700, and
    /// a private directory others may read (made by an earlier version) becomes 0700.
    #[test]
    fn directories_made_on_the_way_to_a_private_one_are_private_too() {
        let dir = tempfile::tempdir().unwrap();
        let staging = dir.path().join("var/tmp/cuda-upgrade");
        let wheel = staging.join("wheels/torch-2.9.1-cp311-cp311-linux_x86_64.whl");
        let public = dir.path().join("public/file");
        let output = write_private(&[(&wheel, true), (&public, false)]);
        assert!(output.status.success(), "{output:?}");
        assert_eq!(mode(&staging.join("wheels")), 0o700);
        assert_eq!(mode(&staging), 0o700);
        assert_eq!(mode(&dir.path().join("var/tmp")), 0o700);
        // A directory that is not private keeps the usual mode.
        assert_eq!(mode(&dir.path().join("public")), 0o755);
        // An earlier version's 0755 staging directory is made private by the next write.
        let old = dir.path().join("old");
        std::fs::create_dir(&old).unwrap();
        std::fs::set_permissions(&old, std::fs::Permissions::from_mode(0o755)).unwrap();
        let output = write_private(&[(&old.join("requirements-sent.txt"), true)]);
        assert!(output.status.success(), "{output:?}");
        assert_eq!(mode(&old), 0o700);
    }

    /// The batch puts files in place in order with their modes, and one whose bytes
    /// ended early stops it there: the files before it are written, it and the rest are
    /// not, and no temporary file is left behind.
    #[test]
    fn a_batch_that_runs_short_keeps_the_files_before_and_leaves_no_temporary() {
        let dir = tempfile::tempdir().unwrap();
        let private = dir.path().join("private");
        std::fs::create_dir(&private).unwrap();
        std::fs::set_permissions(&private, std::fs::Permissions::from_mode(0o700)).unwrap();
        let shared = dir.path().join("shared");
        let file = |directory: &Path, name: &str| directory.join(name).display().to_string();
        let spec = |path: String, mode: &str, private: &str, size: &str| {
            [
                path,
                mode.into(),
                "0".into(),
                private.into(),
                "any".into(),
                String::new(),
                size.into(),
            ]
        };
        let run = |args: Vec<[String; 7]>, input: &[u8]| {
            let mut child = std::process::Command::new("/bin/sh")
                .arg("-c")
                .arg(WRITE_SCRIPT)
                .arg("write-file")
                .arg("--batch")
                .args(args.iter().flatten())
                .stdin(std::process::Stdio::piped())
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .unwrap();
            std::io::Write::write_all(&mut child.stdin.take().unwrap(), input).unwrap();
            child.wait_with_output().unwrap()
        };
        let output = run(
            vec![
                spec(file(&private, "a"), "644", "1", "2"),
                spec(file(&private, "tool"), "755", "1", "3"),
                spec(file(&shared, "c"), "640", "0", "1"),
            ],
            b"aatttc",
        );
        assert!(output.status.success(), "{output:?}");
        assert_eq!(String::from_utf8_lossy(&output.stdout).lines().count(), 3);
        for (name, bytes, mode) in [
            (private.join("a"), b"aa".as_slice(), 0o644),
            (private.join("tool"), b"ttt", 0o755),
            (shared.join("c"), b"c", 0o640),
        ] {
            assert_eq!(std::fs::read(&name).unwrap(), bytes, "{name:?}");
            let found = std::fs::metadata(&name).unwrap().permissions().mode() & 0o7777;
            assert_eq!(found, mode, "{name:?}");
        }
        // As root: a secret over another user's set-user-ID file keeps its owner and mode
        // (the `chown` that gives it back its owner clears the bit; the mode is set again).
        let probe = dir.path().join("owner");
        std::fs::write(&probe, "").unwrap();
        if std::os::unix::fs::MetadataExt::uid(&std::fs::metadata(&probe).unwrap()) == 0 {
            let held = private.join("held");
            std::fs::write(&held, "old").unwrap();
            std::os::unix::fs::chown(&held, Some(65534), Some(65534)).unwrap();
            std::fs::set_permissions(&held, std::fs::Permissions::from_mode(0o4750)).unwrap();
            let mut args = spec(file(&private, "held"), "600", "1", "3");
            args[2] = "1".into();
            let output = run(vec![args], b"new");
            assert!(output.status.success(), "{output:?}");
            let meta = std::fs::metadata(&held).unwrap();
            assert_eq!(std::fs::read(&held).unwrap(), b"new");
            assert_eq!(meta.permissions().mode() & 0o7777, 0o4700);
            assert_eq!(std::os::unix::fs::MetadataExt::uid(&meta), 65534);
        }
        let output = run(
            vec![
                spec(file(&private, "first"), "644", "1", "1"),
                spec(file(&private, "short"), "644", "1", "10"),
                spec(file(&shared, "after"), "644", "0", "1"),
            ],
            b"1short",
        );
        assert_eq!(output.status.code(), Some(3), "{output:?}");
        let stdout = String::from_utf8_lossy(&output.stdout);
        assert_eq!(stdout.lines().count(), 1, "{stdout}");
        assert!(stdout.starts_with("wrote\t"), "{stdout}");
        assert!(
            String::from_utf8_lossy(&output.stderr).contains("short`: the input ended early"),
            "{output:?}"
        );
        assert_eq!(std::fs::read(private.join("first")).unwrap(), b"1");
        assert!(!private.join("short").exists() && !shared.join("after").exists());
        for directory in [&private, &shared] {
            let left: Vec<_> = std::fs::read_dir(directory)
                .unwrap()
                .map(|entry| entry.unwrap().file_name())
                .filter(|name| name.to_string_lossy().starts_with(".cuda-upgrade."))
                .collect();
            assert!(left.is_empty(), "{left:?}");
        }
    }
}
