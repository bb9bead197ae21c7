//! Reading an ELF file's dynamic linking tables with the `object` crate: `.dynsym` with
//! its symbol versions (`.gnu.version`, `.gnu.version_d`, `.gnu.version_r`), and
//! `NEEDED`, `SONAME`, `RUNPATH`/`RPATH` of `.dynamic`. Only those sections are read
//! ([`ranges`] picks them), never code or data.

use object::Endianness;
use object::elf::{self, FileHeader64};
use object::read::elf::{FileHeader, SectionHeader, Sym};

use super::sparse::Sparse;

/// What the dynamic linker sees of one ELF object, e.g. `libc10_cuda.so`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ElfInfo {
    /// `DT_SONAME`, e.g. `libc10_cuda.so`.
    pub soname: Option<String>,
    /// `DT_NEEDED` in order, e.g. `["libc10.so", "libc.so.6"]`.
    pub needed: Vec<String>,
    /// `DT_RUNPATH` (else `DT_RPATH`) entries, e.g. `["$ORIGIN/../torch/lib"]`.
    pub runpath: Vec<String>,
    /// Undefined symbols it needs (weak ones left out: a missing weak symbol is null).
    pub imports: Vec<Import>,
    /// Symbols it defines for others (global, weak or unique; default or protected).
    pub exports: Vec<Export>,
}

/// An undefined symbol, e.g. `memcpy` at `GLIBC_2.14` from `libc.so.6`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Import {
    /// The mangled name, e.g. `_ZN3c104cuda29c10_cuda_check_implementationEiPKcS2_ib`.
    pub name: String,
    /// The required version, e.g. `GLIBC_2.14`.
    pub version: Option<String>,
    /// The library the version is required from (`vn_file`), e.g. `libc.so.6`.
    pub version_file: Option<String>,
}

/// A defined symbol, e.g. `cudaMalloc@@libcudart.so.13`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Export {
    /// The mangled name.
    pub name: String,
    /// The version it is defined at, e.g. `libcudart.so.13`.
    pub version: Option<String>,
}

/// Why an ELF file could not be read.
#[derive(Debug, thiserror::Error)]
pub enum ElfError {
    /// Its bytes could not be read.
    #[error("cannot read it: {0}")]
    Io(#[from] std::io::Error),
    /// Its tables are not valid ELF.
    #[error("invalid ELF: {0}")]
    Invalid(String),
}

impl From<object::read::Error> for ElfError {
    fn from(error: object::read::Error) -> Self {
        Self::Invalid(error.to_string())
    }
}

const HEADER: u64 = 64;
const SECTION_HEADER: u64 = 64;

/// Whether `bytes` start a 64-bit ELF file, the only kind checked (every platform
/// CUDA wheels exist for).
pub fn is_elf64(bytes: &[u8]) -> bool {
    bytes.len() >= 5 && bytes[..4] == *b"\x7fELF" && bytes[4] == elf::ELFCLASS64.0
}

/// The machine a 64-bit ELF executable runs on, as `uname -m` names it (`x86_64`,
/// `aarch64`); `None` for any other file or machine.
pub fn machine(bytes: &[u8]) -> Option<&'static str> {
    if !is_elf64(bytes) {
        return None;
    }
    let header = FileHeader64::<Endianness>::parse(bytes).ok()?;
    match header.e_machine(header.endian().ok()?) {
        elf::EM_X86_64 => Some("x86_64"),
        elf::EM_AARCH64 => Some("aarch64"),
        _ => None,
    }
}

/// The ranges of a file that [`parse`] needs, read through `read_at(offset, length)`:
/// the header, the section headers, the section names and the dynamic tables with
/// their string tables. `Ok(None)` when the file is not a 64-bit ELF file.
pub fn ranges<F>(size: u64, mut read_at: F) -> Result<Option<Sparse>, ElfError>
where
    F: FnMut(u64, u64) -> std::io::Result<Vec<u8>>,
{
    if size < HEADER {
        return Ok(None);
    }
    let mut sparse = Sparse::new(size);
    let header_bytes = read_at(0, HEADER)?;
    if !is_elf64(&header_bytes) {
        return Ok(None);
    }
    sparse.insert(0, header_bytes);
    let (shoff, count) = {
        let header = FileHeader64::<Endianness>::parse(&sparse)?;
        let endian = header.endian()?;
        let shoff = header.e_shoff(endian);
        if shoff == 0 {
            return Ok(Some(sparse));
        }
        (shoff, u64::from(header.e_shnum(endian)))
    };
    let count = if count == 0 {
        // More than 0xff00 sections: the count is in the first section header.
        let first = read_at(shoff, SECTION_HEADER)?;
        sparse.insert(shoff, first);
        let header = FileHeader64::<Endianness>::parse(&sparse)?;
        u64::from(header.shnum(header.endian()?, &sparse)?)
    } else {
        count
    };
    let table = read_at(shoff, count.saturating_mul(SECTION_HEADER))?;
    sparse.insert(shoff, table);
    let wanted: Vec<(u64, u64)> = {
        let header = FileHeader64::<Endianness>::parse(&sparse)?;
        let endian = header.endian()?;
        let sections = header.section_headers(endian, &sparse)?;
        let shstrndx = header.shstrndx(endian, &sparse)? as usize;
        let range = |index: usize| {
            sections
                .get(index)
                .and_then(|section| section.file_range(endian))
        };
        let mut wanted = Vec::new();
        wanted.extend(range(shstrndx));
        for section in sections {
            let kind = section.sh_type(endian);
            if [
                elf::SHT_DYNSYM,
                elf::SHT_DYNAMIC,
                elf::SHT_GNU_VERSYM,
                elf::SHT_GNU_VERDEF,
                elf::SHT_GNU_VERNEED,
            ]
            .contains(&kind)
            {
                wanted.extend(section.file_range(endian));
                let link = section.sh_link(endian) as usize;
                wanted.extend(range(link));
                // `.gnu.version` links to `.dynsym`, whose strings are `.dynstr`.
                if let Some(linked) = sections.get(link) {
                    wanted.extend(range(linked.sh_link(endian) as usize));
                }
            }
        }
        wanted
    };
    for (offset, length) in wanted {
        if !sparse.has(offset, length) {
            let bytes = read_at(offset, length)?;
            sparse.insert(offset, bytes);
        }
    }
    Ok(Some(sparse))
}

/// Read a file's ranges from an open file.
pub fn ranges_of_file(file: &std::fs::File) -> Result<Option<Sparse>, ElfError> {
    use std::os::unix::fs::FileExt;
    let size = file.metadata()?.len();
    ranges(size, |offset, length| {
        let end = offset.saturating_add(length).min(size);
        let mut bytes = vec![0; usize::try_from(end.saturating_sub(offset)).unwrap_or(0)];
        file.read_exact_at(&mut bytes, offset)?;
        Ok(bytes)
    })
}

/// Read the ranges of a whole file held in memory (a wheel's entry).
pub fn ranges_of_bytes(bytes: &[u8]) -> Result<Option<Sparse>, ElfError> {
    ranges(bytes.len() as u64, |offset, length| {
        let from = usize::try_from(offset).unwrap_or(usize::MAX);
        let to = usize::try_from(offset.saturating_add(length)).unwrap_or(usize::MAX);
        bytes
            .get(from..to.min(bytes.len()))
            .map(<[u8]>::to_vec)
            .ok_or_else(|| std::io::Error::new(std::io::ErrorKind::UnexpectedEof, "past the end"))
    })
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// Read the dynamic tables out of a file's ranges.
pub fn parse(sparse: &Sparse) -> Result<ElfInfo, ElfError> {
    let data = sparse;
    let header = FileHeader64::<Endianness>::parse(data)?;
    let endian = header.endian()?;
    let sections = header.sections(endian, data)?;
    let mut info = ElfInfo::default();
    let dynamic = sections.dynamic_table(endian, data)?;
    let mut rpath = Vec::new();
    for entry in dynamic.iter() {
        let value = || dynamic.string(entry).map(text);
        match entry.tag {
            elf::DT_NEEDED => info.needed.push(value()?),
            elf::DT_SONAME => info.soname = Some(value()?),
            elf::DT_RUNPATH => info.runpath.extend(value()?.split(':').map(String::from)),
            elf::DT_RPATH => rpath.extend(value()?.split(':').map(String::from)),
            _ => {}
        }
    }
    if info.runpath.is_empty() {
        info.runpath = rpath;
    }
    info.runpath.retain(|entry| !entry.is_empty());
    let symbols = sections.symbols(endian, data, elf::SHT_DYNSYM)?;
    let versions = sections.versions(endian, data)?;
    for (index, symbol) in symbols.enumerate() {
        let bind = symbol.st_bind();
        if bind == elf::STB_LOCAL || symbol.st_name(endian) == 0 {
            continue;
        }
        let kind = symbol.st_type();
        if kind == elf::STT_SECTION || kind == elf::STT_FILE {
            continue;
        }
        let name = text(symbols.symbol_name(endian, symbol)?);
        let version = match &versions {
            Some(table) => table
                .version(table.version_index(endian, index).index())
                .map_err(ElfError::from)?
                .copied(),
            None => None,
        };
        if symbol.is_undefined(endian) {
            if bind == elf::STB_WEAK {
                continue;
            }
            info.imports.push(Import {
                name,
                version: version.map(|v| text(v.name())),
                version_file: version.and_then(|v| v.file()).map(text),
            });
        } else {
            let visibility = symbol.st_visibility();
            if visibility != elf::STV_DEFAULT && visibility != elf::STV_PROTECTED {
                continue;
            }
            info.exports.push(Export {
                name,
                version: version.map(|v| text(v.name())),
            });
        }
    }
    Ok(info)
}
