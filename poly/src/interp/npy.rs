//! Arrays as NumPy `.npy` files (C order), one file `DIR/NAME.npy` per array.
//!
//! | element type | dtype written | dtypes read |
//! |---|---|---|
//! | `f64` | `<f8` | `f8` |
//! | `f32` | `<f4` | `f4` |
//! | `f16` | `<f2` | `f2` |
//! | `bf16` | `<f4` (NumPy has no bf16) | `f4`, rounded to bf16 (ties to even) |
//! | `i32` | `<i4` | `i4` |
//! | `i8` | `\|i1` | `i1` |
//!
//! Either byte order is read; Fortran-order files are rejected.

use super::error::InterpError;
use super::memory::Memory;
use frontend::ir::{ElemType, Kernel};
use half::f16;
use npyz::{DType, NpyFile, TypeChar, WriterBuilder};
use std::collections::BTreeMap;
use std::io;
use std::path::{Path, PathBuf};

/// One array read from a file.
#[derive(Clone, Debug, PartialEq)]
pub struct InputArray {
    /// Its shape.
    pub shape: Vec<u64>,
    /// Its values in C order, as read (not yet rounded for bf16).
    pub values: Vec<f64>,
}

/// The input arrays found in a directory, by name.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct InputFiles {
    arrays: BTreeMap<String, InputArray>,
}

impl InputFiles {
    /// Reads `dir/NAME.npy` for each input or in-out array of the kernel whose file exists.
    /// A directory that cannot be listed, or a `.npy` file in it that names no array of the
    /// kernel (a typo would otherwise leave that input random), is an error.
    pub fn read_dir(kernel: &Kernel, dir: &Path) -> Result<InputFiles, InterpError> {
        let entries = std::fs::read_dir(dir).map_err(|e| npy_error(dir.to_path_buf(), e))?;
        for entry in entries {
            let path = entry.map_err(|e| npy_error(dir.to_path_buf(), e))?.path();
            let stem = path
                .file_stem()
                .and_then(|s| s.to_str())
                .unwrap_or_default();
            if path.extension().is_some_and(|e| e == "npy") && kernel.array_by_name(stem).is_none()
            {
                let known: Vec<&str> = kernel.arrays.iter().map(|a| a.name.as_str()).collect();
                return Err(npy_error(
                    path.clone(),
                    format!(
                        "names no array of the kernel (it has: {})",
                        known.join(", ")
                    ),
                ));
            }
        }
        let mut arrays = BTreeMap::new();
        for a in kernel.arrays.iter().filter(|a| a.role.is_input()) {
            let path = dir.join(format!("{}.npy", a.name));
            if path.exists() {
                arrays.insert(a.name.clone(), read_npy(&path, &a.name, a.elem)?);
            }
        }
        Ok(InputFiles { arrays })
    }

    /// The array read for `name`, if any.
    pub fn get(&self, name: &str) -> Option<&InputArray> {
        self.arrays.get(name)
    }

    /// The shape of every array read, by name (for [`super::ParamValues::resolve`]).
    pub fn shapes(&self) -> BTreeMap<String, Vec<u64>> {
        self.arrays
            .iter()
            .map(|(n, a)| (n.clone(), a.shape.clone()))
            .collect()
    }
}

impl Memory {
    /// Writes every output and in-out array to `dir/NAME.npy` (creating `dir` if needed).
    pub fn save_outputs(&self, dir: &Path) -> Result<(), InterpError> {
        std::fs::create_dir_all(dir).map_err(|e| npy_error(dir.to_path_buf(), e))?;
        for a in self.arrays().iter().filter(|a| a.role.is_output()) {
            let path = dir.join(format!("{}.npy", a.name));
            write_npy(&path, a.elem, &a.shape, a.values()).map_err(|e| npy_error(path, e))?;
        }
        Ok(())
    }
}

fn npy_error(path: PathBuf, e: impl std::fmt::Display) -> InterpError {
    InterpError::Npy {
        path,
        message: e.to_string(),
    }
}

/// The dtype read and written for an element type: type character, size, written spelling.
fn dtype_of(elem: ElemType) -> (TypeChar, u64, &'static str) {
    match elem {
        ElemType::F64 => (TypeChar::Float, 8, "<f8"),
        ElemType::F32 | ElemType::BF16 => (TypeChar::Float, 4, "<f4"),
        ElemType::F16 => (TypeChar::Float, 2, "<f2"),
        ElemType::I32 => (TypeChar::Int, 4, "<i4"),
        ElemType::I8 => (TypeChar::Int, 1, "|i1"),
    }
}

/// Whether `bytes` start with a `.npy` header that nests nothing: a structured type's header
/// nests brackets, braces or parentheses, and nesting makes the header parser of `npyz` take
/// exponential time (found by fuzzing the simulator's reader, which checks the same).
fn plain_header(bytes: &[u8]) -> bool {
    let (len, start): (usize, usize) = match bytes.get(6) {
        Some(1) if bytes.len() >= 10 => (u16::from_le_bytes([bytes[8], bytes[9]]) as usize, 10),
        Some(2 | 3) if bytes.len() >= 12 => {
            let b = [bytes[8], bytes[9], bytes[10], bytes[11]];
            (u32::from_le_bytes(b) as usize, 12)
        }
        _ => return false,
    };
    let Some(header) = bytes.get(start..start.saturating_add(len)) else {
        return false;
    };
    let count = |c: u8| header.iter().filter(|&&b| b == c).count();
    bytes.starts_with(b"\x93NUMPY") && count(b'[') == 0 && count(b'{') <= 1 && count(b'(') <= 1
}

fn read_npy(path: &Path, name: &str, elem: ElemType) -> Result<InputArray, InterpError> {
    let bytes = std::fs::read(path).map_err(|e| npy_error(path.to_path_buf(), e))?;
    if !plain_header(&bytes) {
        let why = "not a .npy file with a plain header (one dictionary, one shape tuple)";
        let e = std::io::Error::new(std::io::ErrorKind::InvalidData, why);
        return Err(npy_error(path.to_path_buf(), e));
    }
    let npy = NpyFile::new(&bytes[..]).map_err(|e| npy_error(path.to_path_buf(), e))?;
    let (type_char, size, spelling) = dtype_of(elem);
    let dtype = npy.dtype();
    let matches =
        matches!(&dtype, DType::Plain(t) if t.type_char() == type_char && t.size_field() == size);
    if !matches {
        return Err(InterpError::DtypeMismatch {
            array: name.to_string(),
            expected: format!("{spelling} (for {elem})"),
            found: match dtype {
                DType::Plain(t) => t.to_string(),
                other => other.descr(),
            },
        });
    }
    if npy.order() != npyz::Order::C {
        return Err(npy_error(
            path.to_path_buf(),
            "Fortran-order arrays are not supported; save in C order",
        ));
    }
    let shape = npy.shape().to_vec();
    let values = match elem {
        ElemType::F64 => npy.into_vec::<f64>(),
        ElemType::F32 | ElemType::BF16 => widen(npy.into_vec::<f32>()),
        ElemType::F16 => widen(npy.into_vec::<f16>()),
        ElemType::I32 => widen(npy.into_vec::<i32>()),
        ElemType::I8 => widen(npy.into_vec::<i8>()),
    }
    .map_err(|e| npy_error(path.to_path_buf(), e))?;
    Ok(InputArray { shape, values })
}

fn widen<T: Into<f64>>(values: io::Result<Vec<T>>) -> io::Result<Vec<f64>> {
    values.map(|v| v.into_iter().map(Into::into).collect())
}

fn write_npy(path: &Path, elem: ElemType, shape: &[usize], values: &[f64]) -> io::Result<()> {
    let shape: Vec<u64> = shape.iter().map(|&d| d as u64).collect();
    let file = io::BufWriter::new(std::fs::File::create(path)?);
    match elem {
        ElemType::F64 => write_typed(file, &shape, values.iter().copied()),
        ElemType::F32 | ElemType::BF16 => {
            write_typed(file, &shape, values.iter().map(|&v| v as f32))
        }
        ElemType::F16 => write_typed(file, &shape, values.iter().map(|&v| f16::from_f64(v))),
        ElemType::I32 => write_typed(file, &shape, values.iter().map(|&v| v as i32)),
        ElemType::I8 => write_typed(file, &shape, values.iter().map(|&v| v as i8)),
    }
}

fn write_typed<T: npyz::AutoSerialize>(
    file: impl io::Write,
    shape: &[u64],
    values: impl Iterator<Item = T>,
) -> io::Result<()> {
    let mut writer = npyz::WriteOptions::new()
        .default_dtype()
        .shape(shape)
        .writer(file)
        .begin_nd()?;
    writer.extend(values)?;
    writer.finish()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::interp::ParamValues;
    use frontend::ir::{AffExpr, Array, Param, Role, Var};
    use frontend::span::Span;

    /// One in-out array per element type, plus a scalar: `X_f16: inout f16[N, 2]`, ...
    fn kernel() -> Kernel {
        let array = |name: String, elem, dims| Array {
            name,
            elem,
            dims,
            role: Role::InOut,
            span: Span::default(),
        };
        let mut arrays: Vec<Array> = ElemType::ALL
            .iter()
            .map(|&t| {
                array(
                    format!("X_{t}"),
                    t,
                    vec![AffExpr::Var(Var::Param("N".into())), AffExpr::Const(2)],
                )
            })
            .collect();
        arrays.push(array("s".into(), ElemType::F64, vec![]));
        Kernel {
            name: "k".into(),
            params: vec![Param {
                name: "N".into(),
                default: None,
                span: Span::default(),
            }],
            param_constraints: vec![],
            arrays,
            body: vec![],
        }
    }

    #[test]
    fn every_dtype_round_trips_and_implies_parameters() {
        let k = kernel();
        let overrides = [("N".to_string(), 3)].into();
        let params = ParamValues::resolve(&k, &overrides, &BTreeMap::new()).unwrap();
        let memory = Memory::random(&k, &params, 1).unwrap();
        let dir = tempfile::tempdir().unwrap();
        memory.save_outputs(dir.path()).unwrap();
        let inputs = InputFiles::read_dir(&k, dir.path()).unwrap();
        assert_eq!(inputs.shapes()["s"], Vec::<u64>::new());
        let params = ParamValues::resolve(&k, &BTreeMap::new(), &inputs.shapes()).unwrap();
        assert_eq!(params.get("N"), Some(3));
        let reread = Memory::load_inputs(&k, &params, &inputs, 99).unwrap();
        assert!(memory.bit_identical(&reread));
    }

    #[test]
    fn wrong_dtype_and_shape_are_reported() {
        let k = kernel();
        let dir = tempfile::tempdir().unwrap();
        let f32_file =
            io::BufWriter::new(std::fs::File::create(dir.path().join("X_f64.npy")).unwrap());
        write_typed(f32_file, &[3, 2], [0.5f32; 6].into_iter()).unwrap();
        assert_eq!(
            InputFiles::read_dir(&k, dir.path()),
            Err(InterpError::DtypeMismatch {
                array: "X_f64".into(),
                expected: "<f8 (for f64)".into(),
                found: "<f4".into()
            })
        );
        std::fs::remove_file(dir.path().join("X_f64.npy")).unwrap();
        let f32_file =
            io::BufWriter::new(std::fs::File::create(dir.path().join("X_f32.npy")).unwrap());
        write_typed(f32_file, &[3, 5], [0.5f32; 15].into_iter()).unwrap();
        let inputs = InputFiles::read_dir(&k, dir.path()).unwrap();
        let err = ParamValues::resolve(&k, &BTreeMap::new(), &inputs.shapes()).unwrap_err();
        assert_eq!(
            err.to_string(),
            "array `X_f32`, dimension 1: expected extent 2, found 5"
        );
    }

    #[test]
    fn bf16_inputs_are_rounded() {
        let k = kernel();
        let dir = tempfile::tempdir().unwrap();
        let file =
            io::BufWriter::new(std::fs::File::create(dir.path().join("X_bf16.npy")).unwrap());
        write_typed(file, &[1, 2], [1.0f32 + 2f32.powi(-9), 3.0].into_iter()).unwrap();
        let inputs = InputFiles::read_dir(&k, dir.path()).unwrap();
        let params = ParamValues::resolve(&k, &BTreeMap::new(), &inputs.shapes()).unwrap();
        let memory = Memory::load_inputs(&k, &params, &inputs, 0).unwrap();
        assert_eq!(memory.array("X_bf16").unwrap().values(), &[1.0, 3.0]);
    }

    #[test]
    fn only_plain_headers_reach_the_npy_parser() {
        let npy = |header: &str| {
            let mut b = b"\x93NUMPY\x01\x00".to_vec();
            b.extend_from_slice(&(header.len() as u16).to_le_bytes());
            b.extend_from_slice(header.as_bytes());
            b
        };
        assert!(plain_header(&npy(
            "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }"
        )));
        let nested = format!("{{'descr': {}'<f4', 'shape': (2,), }}", "{".repeat(100));
        assert!(!plain_header(&npy(&nested)));
        assert!(!plain_header(&npy(
            "{'descr': [('a', '<f4')], 'shape': (2,), }"
        )));
        assert!(!plain_header(b"\x93NUMPY\x01"));
        assert!(!plain_header(b"PK\x03\x04 not npy at all"));
    }
}
