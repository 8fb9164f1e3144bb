//! The machine the cache model sizes tiles for: data cache sizes, vector width and cores.
//!
//! [`Machine::host`] reads Linux's description of the first CPU's caches
//! (`/sys/devices/system/cpu/cpu0/cache/index*/{level,type,size}`); a level it cannot read
//! keeps the value of [`Machine::FALLBACK`] (L1d 32 KiB, L2 1 MiB, L3 32 MiB, 32-byte AVX2
//! vectors, one core). Its cores are the threads this process may run
//! (`std::thread::available_parallelism`), which OpenMP also starts by default. Tests build a [`Machine`] directly, so that chosen sizes do not depend on the
//! machine running them.
//!
//! [`NamedMachine::parse`] reads a machine file (`polyc --machine FILE`), so that tiles can be
//! sized for a machine other than the one running polyc:
//!
//! ```toml
//! name = "skylake-sp-2c"   # how reports name it
//! cores = 2
//! l1d = "32K"              # bytes, or a size with K, M or G as sysfs writes them
//! l2 = "1M"
//! l3 = "32M"               # optional (the fallback's 32 MiB)
//! vector_bytes = 32        # 16: SSE/NEON, 32: AVX2, 64: AVX-512
//! ```

use serde::{Deserialize, Serialize};
use std::fmt;
use std::path::Path;

/// Where Linux describes the first CPU's caches.
pub const SYSFS_CACHE_DIR: &str = "/sys/devices/system/cpu/cpu0/cache";

const KIB: u64 = 1024;

/// Cache sizes and vector width, in bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct Machine {
    /// Level-1 data cache (per core).
    pub l1d_bytes: u64,
    /// Level-2 cache (per core on current x86 parts).
    pub l2_bytes: u64,
    /// Level-3 cache (shared); reported, not used by the sizing rule.
    pub l3_bytes: u64,
    /// Width of one SIMD register (16: SSE/NEON, 32: AVX2, 64: AVX-512).
    pub vector_bytes: u32,
    /// Hardware threads the generated code's OpenMP loops share work among.
    pub cores: u32,
}

impl Machine {
    /// The documented defaults, for whatever cannot be read from the machine.
    pub const FALLBACK: Machine = Machine {
        l1d_bytes: 32 * KIB,
        l2_bytes: 1024 * KIB,
        l3_bytes: 32 * 1024 * KIB,
        vector_bytes: 32,
        cores: 1,
    };

    /// The machine running this process: its caches from sysfs, its widest vector unit from
    /// the CPU's feature flags, its cores from the threads this process may run.
    pub fn host() -> Machine {
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get() as u32);
        Machine {
            cores,
            ..Machine::from_sysfs(Path::new(SYSFS_CACHE_DIR), host_vector_bytes())
        }
    }

    /// The caches described under `dir` (a sysfs `cache` directory), with `vector_bytes`;
    /// levels missing or unreadable there keep [`Machine::FALLBACK`]'s sizes.
    pub fn from_sysfs(dir: &Path, vector_bytes: u32) -> Machine {
        let mut m = Machine {
            vector_bytes,
            ..Machine::FALLBACK
        };
        let Ok(entries) = std::fs::read_dir(dir) else {
            return m;
        };
        let mut found: Vec<(u32, u64)> = entries
            .flatten()
            .filter(|e| e.file_name().to_string_lossy().starts_with("index"))
            .filter_map(|e| data_cache(&e.path()))
            .collect();
        // Directory order is arbitrary: make the result independent of it.
        found.sort_unstable();
        for (level, size) in found {
            match level {
                1 => m.l1d_bytes = size,
                2 => m.l2_bytes = size,
                3 => m.l3_bytes = size,
                _ => {}
            }
        }
        m
    }
}

impl Default for Machine {
    fn default() -> Self {
        Machine::FALLBACK
    }
}

impl fmt::Display for Machine {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "L1d {} KiB, L2 {} KiB, L3 {} KiB, {}-byte vectors, {} core(s)",
            self.l1d_bytes / KIB,
            self.l2_bytes / KIB,
            self.l3_bytes / KIB,
            self.vector_bytes,
            self.cores
        )
    }
}

/// A machine described by a machine file: its name and its figures.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct NamedMachine {
    /// The name the file gives it.
    pub name: String,
    /// Its figures.
    #[serde(flatten)]
    pub machine: Machine,
}

/// Why a machine file was refused.
#[derive(Debug, thiserror::Error)]
pub enum MachineFileError {
    /// Not TOML, or not the fields of a machine file (the message has the line and column).
    #[error("{0}")]
    Syntax(String),
    /// A size that is not bytes nor a number with K, M or G.
    #[error("`{field}` is not a size: `{text}` (bytes, or a number with K, M or G)")]
    Size {
        /// The field.
        field: &'static str,
        /// What it holds.
        text: String,
    },
    /// A count or width that must be positive.
    #[error("`{0}` must be positive")]
    NotPositive(&'static str),
}

/// A cache size in a machine file: bytes, or sysfs's notation.
#[derive(Deserialize)]
#[serde(untagged)]
enum SizeField {
    Bytes(u64),
    Text(String),
}

/// A machine file as written.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct MachineFile {
    name: String,
    cores: u32,
    l1d: SizeField,
    l2: SizeField,
    l3: Option<SizeField>,
    vector_bytes: u32,
}

impl NamedMachine {
    /// The machine a machine file describes (see the module documentation).
    pub fn parse(text: &str) -> Result<NamedMachine, MachineFileError> {
        let file: MachineFile =
            toml::from_str(text).map_err(|e| MachineFileError::Syntax(e.to_string()))?;
        let size = |field: &'static str, value: SizeField| match value {
            SizeField::Bytes(0) => Err(MachineFileError::NotPositive(field)),
            SizeField::Bytes(b) => Ok(b),
            SizeField::Text(text) => {
                parse_size(&text).ok_or(MachineFileError::Size { field, text })
            }
        };
        if file.cores == 0 {
            return Err(MachineFileError::NotPositive("cores"));
        }
        if file.vector_bytes == 0 {
            return Err(MachineFileError::NotPositive("vector_bytes"));
        }
        Ok(NamedMachine {
            name: file.name,
            machine: Machine {
                l1d_bytes: size("l1d", file.l1d)?,
                l2_bytes: size("l2", file.l2)?,
                l3_bytes: match file.l3 {
                    Some(l3) => size("l3", l3)?,
                    None => Machine::FALLBACK.l3_bytes,
                },
                vector_bytes: file.vector_bytes,
                cores: file.cores,
            },
        })
    }
}

/// `(level, size)` of a data or unified cache described in `index_dir`.
fn data_cache(index_dir: &Path) -> Option<(u32, u64)> {
    let read = |name: &str| std::fs::read_to_string(index_dir.join(name)).ok();
    let kind = read("type")?;
    if !matches!(kind.trim(), "Data" | "Unified") {
        return None;
    }
    let level = read("level")?.trim().parse().ok()?;
    let size = parse_size(&read("size")?)?;
    Some((level, size))
}

/// Parses sysfs's cache size notation: `48K`, `2M`, `1G` or plain bytes.
fn parse_size(text: &str) -> Option<u64> {
    let text = text.trim();
    let (digits, unit) = match text.as_bytes().last()? {
        b'K' => (&text[..text.len() - 1], KIB),
        b'M' => (&text[..text.len() - 1], KIB * KIB),
        b'G' => (&text[..text.len() - 1], KIB * KIB * KIB),
        _ => (text, 1),
    };
    digits
        .parse::<u64>()
        .ok()?
        .checked_mul(unit)
        .filter(|&s| s > 0)
}

/// The widest vector register the CPU running this process supports.
fn host_vector_bytes() -> u32 {
    #[cfg(target_arch = "x86_64")]
    {
        if std::arch::is_x86_feature_detected!("avx512f") {
            return 64;
        }
        if std::arch::is_x86_feature_detected!("avx") {
            return 32;
        }
    }
    16
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A fresh scratch directory for one test (removed when dropped).
    struct Scratch(std::path::PathBuf);

    impl Scratch {
        fn new(name: &str) -> Scratch {
            let dir =
                std::env::temp_dir().join(format!("polyc-machine-{name}-{}", std::process::id()));
            let _ = std::fs::remove_dir_all(&dir);
            std::fs::create_dir_all(&dir).unwrap();
            Scratch(dir)
        }
        fn path(&self) -> &Path {
            &self.0
        }
    }

    impl Drop for Scratch {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    fn write_index(dir: &Path, index: u32, level: u32, kind: &str, size: &str) {
        let d = dir.join(format!("index{index}"));
        std::fs::create_dir_all(&d).unwrap();
        std::fs::write(d.join("level"), format!("{level}\n")).unwrap();
        std::fs::write(d.join("type"), format!("{kind}\n")).unwrap();
        std::fs::write(d.join("size"), format!("{size}\n")).unwrap();
    }

    #[test]
    fn sizes_parse() {
        assert_eq!(parse_size("48K\n"), Some(48 * 1024));
        assert_eq!(parse_size("2M"), Some(2 << 20));
        assert_eq!(parse_size("4096"), Some(4096));
        assert_eq!(parse_size("K"), None);
        assert_eq!(parse_size("0K"), None);
        assert_eq!(parse_size("lots"), None);
    }

    #[test]
    fn reads_data_and_unified_caches_and_skips_instruction_caches() {
        let dir = Scratch::new("read");
        write_index(dir.path(), 0, 1, "Data", "48K");
        write_index(dir.path(), 1, 1, "Instruction", "32K");
        write_index(dir.path(), 2, 2, "Unified", "2048K");
        write_index(dir.path(), 3, 3, "Unified", "300M");
        let m = Machine::from_sysfs(dir.path(), 64);
        assert_eq!(
            m,
            Machine {
                l1d_bytes: 48 << 10,
                l2_bytes: 2 << 20,
                l3_bytes: 300 << 20,
                vector_bytes: 64,
                cores: 1,
            }
        );
        assert_eq!(
            m.to_string(),
            "L1d 48 KiB, L2 2048 KiB, L3 307200 KiB, 64-byte vectors, 1 core(s)"
        );
    }

    #[test]
    fn machine_files_give_their_figures_or_a_reason() {
        let m = NamedMachine::parse(
            "name = \"small\"\ncores = 2\nl1d = \"32K\"\nl2 = 262144\nvector_bytes = 16\n",
        )
        .unwrap();
        assert_eq!(m.name, "small");
        assert_eq!(
            m.machine,
            Machine {
                l1d_bytes: 32 << 10,
                l2_bytes: 256 << 10,
                l3_bytes: Machine::FALLBACK.l3_bytes,
                vector_bytes: 16,
                cores: 2,
            }
        );
        let err = |text: &str| NamedMachine::parse(text).unwrap_err().to_string();
        let base = "name = \"m\"\ncores = 1\nl2 = \"1M\"\nvector_bytes = 32\n";
        assert_eq!(
            err(&format!("{base}l1d = \"lots\"\n")),
            "`l1d` is not a size: `lots` (bytes, or a number with K, M or G)"
        );
        assert_eq!(err(&format!("{base}l1d = 0\n")), "`l1d` must be positive");
        let unknown = err(&format!("{base}l1d = 1\nl4 = 2\n"));
        assert!(
            unknown.contains("line 6") && unknown.contains("l4"),
            "{unknown}"
        );
        assert!(err(base).contains("l1d"), "{}", err(base));
    }

    #[test]
    fn unreadable_levels_keep_the_defaults() {
        let dir = Scratch::new("defaults");
        write_index(dir.path(), 0, 1, "Data", "garbage");
        write_index(dir.path(), 2, 2, "Unified", "512K");
        let m = Machine::from_sysfs(dir.path(), 32);
        assert_eq!(m.l1d_bytes, Machine::FALLBACK.l1d_bytes);
        assert_eq!(m.l2_bytes, 512 << 10);
        assert_eq!(m.l3_bytes, Machine::FALLBACK.l3_bytes);
        assert_eq!(
            Machine::from_sysfs(&dir.path().join("missing"), 32),
            Machine::FALLBACK
        );
    }
}
