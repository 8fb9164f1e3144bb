//! Tensor values in and out of a run, as `.npy` files (f16 `<f2`, f32 `<f4`, i8 `|i1`,
//! i32 `<i4`; bf16 has no NumPy type and travels as `<f4`).

use crate::elem;
use crate::program::{elements, DType};
use half::f16;
use npyz::WriterBuilder;
use std::io::{self, BufReader, BufWriter, Read};
use std::path::Path;

/// A tensor's element type, shape and little-endian bytes.
#[derive(Clone, Debug, PartialEq)]
pub struct TensorData {
    /// Element type.
    pub dtype: DType,
    /// Shape, row-major.
    pub shape: Vec<u64>,
    /// `elements * dtype.size()` bytes.
    pub bytes: Vec<u8>,
}

/// Why a `.npy` file could not be used.
#[derive(Debug, thiserror::Error)]
pub enum NpyError {
    /// Reading or writing failed.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: String,
        /// The cause.
        source: io::Error,
    },
    /// The file's element type does not fit.
    #[error("{path}: element type `{found}` does not fit {want} (expected `{expected}`)")]
    Type {
        /// The file.
        path: String,
        /// The file's type string.
        found: String,
        /// The tensor's type.
        want: DType,
        /// The type string expected.
        expected: &'static str,
    },
}

/// The magic string, version, header length and header of `.npy` bytes, checked to be a plain
/// dictionary: a header that nests brackets, braces or parentheses describes a structured
/// type, which we do not read (and which makes the header parser of `npyz` take exponential
/// time).
fn npy_header<R: io::Read>(mut reader: R) -> io::Result<(Vec<u8>, R)> {
    let bad = |what: &str| io::Error::new(io::ErrorKind::InvalidData, what.to_string());
    let mut head = vec![0u8; 8];
    reader.read_exact(&mut head)?;
    if &head[..6] != b"\x93NUMPY" {
        return Err(bad("not a .npy file (no magic string)"));
    }
    let len = match head[6] {
        1 => {
            let mut b = [0u8; 2];
            reader.read_exact(&mut b)?;
            head.extend_from_slice(&b);
            u16::from_le_bytes(b) as usize
        }
        2 | 3 => {
            let mut b = [0u8; 4];
            reader.read_exact(&mut b)?;
            head.extend_from_slice(&b);
            u32::from_le_bytes(b) as usize
        }
        v => return Err(bad(&format!("unsupported .npy version {v}"))),
    };
    if len > 1 << 16 {
        return Err(bad("the .npy header is longer than 64 KiB"));
    }
    let start = head.len();
    head.resize(start + len, 0);
    reader.read_exact(&mut head[start..])?;
    // A plain header is one dictionary with one shape tuple: nothing nests.
    let count = |c: u8| head[start..].iter().filter(|&&b| b == c).count();
    if count(b'[') > 0 || count(b'{') > 1 || count(b'(') > 1 {
        return Err(bad("the .npy header describes a structured type"));
    }
    Ok((head, reader))
}

fn descr(dtype: DType) -> &'static str {
    match dtype {
        DType::F16 => "<f2",
        DType::F32 | DType::Bf16 => "<f4",
        DType::I8 => "|i1",
        DType::I32 => "<i4",
    }
}

impl TensorData {
    /// A tensor from values (rounded to the type).
    pub fn from_values(dtype: DType, shape: &[u64], values: &[f64]) -> TensorData {
        let mut bytes = vec![0; values.len() * dtype.size() as usize];
        elem::store(dtype, values, &mut bytes);
        TensorData {
            dtype,
            shape: shape.to_vec(),
            bytes,
        }
    }

    /// The values as f64.
    pub fn values(&self) -> Vec<f64> {
        elem::load(self.dtype, &self.bytes)
    }

    /// Sum of the values and FNV-1a hash of the bytes.
    pub fn checksum(&self) -> (f64, u64) {
        let hash = self.bytes.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, &b| {
            (h ^ b as u64).wrapping_mul(0x100_0000_01b3)
        });
        (self.values().iter().sum(), hash)
    }

    /// Reads a `.npy` file as a tensor of type `dtype` (the shape comes from the file).
    pub fn read_npy(path: &Path, dtype: DType) -> Result<TensorData, NpyError> {
        let p = path.display().to_string();
        let file = std::fs::File::open(path).map_err(|source| NpyError::Io {
            path: p.clone(),
            source,
        })?;
        TensorData::from_npy(BufReader::new(file), &p, dtype)
    }

    /// Reads `.npy` bytes as a tensor of type `dtype`; `path` names them in errors.
    pub fn from_npy(
        reader: impl io::Read,
        path: &str,
        dtype: DType,
    ) -> Result<TensorData, NpyError> {
        let p = path.to_string();
        let io_err = |source| NpyError::Io {
            path: p.clone(),
            source,
        };
        let (header, rest) = npy_header(reader).map_err(io_err)?;
        let npy = npyz::NpyFile::new(io::Cursor::new(header).chain(rest)).map_err(io_err)?;
        let found = npy.dtype().descr().trim_matches('\'').to_string();
        if found != descr(dtype) {
            return Err(NpyError::Type {
                path: p,
                found,
                want: dtype,
                expected: descr(dtype),
            });
        }
        let shape = npy.shape().to_vec();
        let values: Vec<f64> = match dtype {
            DType::F16 => npy
                .into_vec::<f16>()
                .map_err(io_err)?
                .into_iter()
                .map(f64::from)
                .collect(),
            DType::F32 | DType::Bf16 => npy
                .into_vec::<f32>()
                .map_err(io_err)?
                .into_iter()
                .map(f64::from)
                .collect(),
            DType::I8 => npy
                .into_vec::<i8>()
                .map_err(io_err)?
                .into_iter()
                .map(f64::from)
                .collect(),
            DType::I32 => npy
                .into_vec::<i32>()
                .map_err(io_err)?
                .into_iter()
                .map(f64::from)
                .collect(),
        };
        if values.len() as u64 != elements(&shape) {
            return Err(io_err(io::Error::new(
                io::ErrorKind::InvalidData,
                "data length does not match the shape",
            )));
        }
        Ok(TensorData::from_values(dtype, &shape, &values))
    }

    /// Writes the tensor as a `.npy` file.
    pub fn write_npy(&self, path: &Path) -> Result<(), NpyError> {
        let io_err = |source| NpyError::Io {
            path: path.display().to_string(),
            source,
        };
        let file = BufWriter::new(std::fs::File::create(path).map_err(io_err)?);
        let values = self.values();
        match self.dtype {
            DType::F16 => write(file, &self.shape, values.iter().map(|v| f16::from_f64(*v))),
            DType::F32 | DType::Bf16 => write(file, &self.shape, values.iter().map(|v| *v as f32)),
            DType::I8 => write(file, &self.shape, values.iter().map(|v| *v as i8)),
            DType::I32 => write(file, &self.shape, values.iter().map(|v| *v as i32)),
        }
        .map_err(io_err)
    }
}

fn write<T: npyz::AutoSerialize, W: io::Write>(
    w: W,
    shape: &[u64],
    values: impl Iterator<Item = T>,
) -> io::Result<()> {
    let mut writer = npyz::WriteOptions::new()
        .default_dtype()
        .shape(shape)
        .writer(w)
        .begin_nd()?;
    writer.extend(values)?;
    writer.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn npy_round_trips_every_type() {
        let dir = tempfile::tempdir().unwrap();
        for dt in DType::ALL {
            let t = TensorData::from_values(*dt, &[2, 3], &[1.0, -2.0, 3.0, 0.0, 5.0, -6.0]);
            let path = dir.path().join(format!("{dt}.npy"));
            t.write_npy(&path).unwrap();
            assert_eq!(TensorData::read_npy(&path, *dt).unwrap(), t);
        }
        let path = dir.path().join("f16.npy");
        assert!(matches!(
            TensorData::read_npy(&path, DType::I32),
            Err(NpyError::Type { .. })
        ));
    }

    #[test]
    fn headers_that_are_not_plain_dictionaries_are_refused_at_once() {
        // Found by the npy fuzz target: nested brackets took npyz's header parser
        // exponential time (fuzz/regressions/npy/nested_brackets_header.npy).
        let mut bytes = b"\x93NUMPY\x01\x00".to_vec();
        let header = format!(
            "{{'descr': '<f4', 'fortran_order': {}False]], 'shape': (4,), }}\n",
            "[".repeat(200)
        );
        bytes.extend_from_slice(&(header.len() as u16).to_le_bytes());
        bytes.extend_from_slice(header.as_bytes());
        bytes.extend_from_slice(&[0u8; 16]);
        let err = TensorData::from_npy(&bytes[..], "x.npy", DType::F32).unwrap_err();
        assert!(err.to_string().contains("structured type"), "{err}");
        let braces = header.replace(&"[".repeat(200), &"{".repeat(200));
        let mut bytes = b"\x93NUMPY\x01\x00".to_vec();
        bytes.extend_from_slice(&(braces.len() as u16).to_le_bytes());
        bytes.extend_from_slice(braces.as_bytes());
        let err = TensorData::from_npy(&bytes[..], "x.npy", DType::F32).unwrap_err();
        assert!(err.to_string().contains("structured type"), "{err}");
        let err = TensorData::from_npy(&b"PK\x03\x04"[..], "x.npy", DType::F32).unwrap_err();
        assert!(err.to_string().contains("x.npy"), "{err}");
    }
}
