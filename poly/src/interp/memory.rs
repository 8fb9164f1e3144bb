//! The contents of every array of a kernel: creation (zero, seeded random, from input files),
//! checksums and comparison.

use super::arith::arith;
use super::error::InterpError;
use super::npy::InputFiles;
use super::params::{array_extents, ParamValues};
use frontend::ir::{ElemType, Kernel, Role};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::fmt;

/// The contents of one array, in C order; every value is exactly representable in the
/// element type.
#[derive(Clone, Debug, PartialEq)]
pub struct ArrayValues {
    /// The array's name.
    pub name: String,
    /// Its role: which arrays [`Memory::save_outputs`] writes and
    /// [`Memory::load_inputs`] reads.
    pub role: Role,
    pub(crate) elem: ElemType,
    pub(crate) shape: Vec<usize>,
    pub(crate) values: Vec<f64>,
}

impl ArrayValues {
    /// Its element type.
    pub fn elem(&self) -> ElemType {
        self.elem
    }

    /// Its extents.
    pub fn shape(&self) -> &[usize] {
        &self.shape
    }

    /// The values, flattened in C order.
    pub fn values(&self) -> &[f64] {
        &self.values
    }

    /// Replaces the values (flattened in C order), each rounded to the element type.
    pub fn set_values(&mut self, values: &[f64]) -> Result<(), InterpError> {
        if values.len() != self.values.len() {
            return Err(InterpError::MemoryMismatch {
                reason: format!(
                    "`{}` has {} elements, {} values given",
                    self.name,
                    self.values.len(),
                    values.len()
                ),
            });
        }
        let a = arith(self.elem);
        self.values = values.iter().map(|&v| a.round(v)).collect();
        Ok(())
    }

    /// The first dimension where `found` differs from this array's shape, as an error.
    pub(crate) fn check_shape(&self, found: &[u64]) -> Result<(), InterpError> {
        if found.len() != self.shape.len() {
            return Err(InterpError::RankMismatch {
                array: self.name.clone(),
                expected: self.shape.len(),
                found: found.len(),
            });
        }
        match self
            .shape
            .iter()
            .zip(found)
            .position(|(&e, &f)| e as u64 != f)
        {
            None => Ok(()),
            Some(dim) => Err(InterpError::ShapeMismatch {
                array: self.name.clone(),
                dim,
                expected: self.shape[dim] as i64,
                found: found[dim],
            }),
        }
    }

    fn checksum(&self) -> Checksum {
        let a = arith(self.elem);
        // FNV-1a over the little-endian bytes of each element in its own type.
        let hash = self.values.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, &v| {
            let bytes = a.to_bits(v).to_le_bytes();
            bytes[..self.elem.size_bytes()].iter().fold(h, |h, &b| {
                (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3)
            })
        });
        Checksum {
            name: self.name.clone(),
            elem: self.elem,
            shape: self.shape.clone(),
            sum: self.values.iter().sum(),
            hash,
        }
    }

    fn diff(&self, other: &ArrayValues) -> ArrayDiff {
        let a = arith(self.elem);
        let mut d = ArrayDiff {
            name: self.name.clone(),
            max_abs: 0.0,
            max_rel: 0.0,
            mismatches: 0,
        };
        for (&x, &y) in self.values.iter().zip(&other.values) {
            if a.to_bits(x) == a.to_bits(y) {
                continue;
            }
            d.mismatches += 1;
            let abs = if x.is_nan() || y.is_nan() {
                f64::INFINITY
            } else {
                (x - y).abs()
            };
            let scale = x.abs().max(y.abs());
            let rel = if abs == 0.0 { 0.0 } else { abs / scale };
            d.max_abs = d.max_abs.max(abs);
            d.max_rel = d.max_rel.max(rel);
        }
        d
    }
}

/// The contents of all arrays of a kernel (in [`Kernel::arrays`] order) for given parameter
/// values.
#[derive(Clone, Debug, PartialEq)]
pub struct Memory {
    pub(crate) arrays: Vec<ArrayValues>,
}

impl Memory {
    /// Every array zero.
    pub fn zeroed(kernel: &Kernel, params: &ParamValues) -> Result<Memory, InterpError> {
        let extents = array_extents(kernel, params)?;
        let arrays = kernel
            .arrays
            .iter()
            .zip(extents)
            .map(|(a, shape)| ArrayValues {
                name: a.name.clone(),
                elem: a.elem,
                role: a.role,
                values: vec![0.0; shape.iter().product()],
                shape,
            })
            .collect();
        Ok(Memory { arrays })
    }

    /// Input and in-out arrays seeded random (see [`Memory::load_inputs`]), the others zero.
    pub fn random(kernel: &Kernel, params: &ParamValues, seed: u64) -> Result<Memory, InterpError> {
        Memory::load_inputs(kernel, params, &InputFiles::default(), seed)
    }

    /// Input and in-out arrays from `inputs` where given, else seeded random; outputs and
    /// temporaries zero. Random values come from a ChaCha8 generator keyed by `seed` and the
    /// array's name (so adding an array does not change the others): floats uniform in
    /// `[-1, 1)` rounded to the type, integers uniform in `-8..8`.
    pub fn load_inputs(
        kernel: &Kernel,
        params: &ParamValues,
        inputs: &InputFiles,
        seed: u64,
    ) -> Result<Memory, InterpError> {
        let mut memory = Memory::zeroed(kernel, params)?;
        for array in memory.arrays.iter_mut().filter(|a| a.role.is_input()) {
            match inputs.get(&array.name) {
                Some(given) => {
                    array.check_shape(&given.shape)?;
                    array.set_values(&given.values)?;
                }
                None => fill_random(array, seed),
            }
        }
        Ok(memory)
    }

    /// All arrays, in [`Kernel::arrays`] order.
    pub fn arrays(&self) -> &[ArrayValues] {
        &self.arrays
    }

    /// An array by name.
    pub fn array(&self, name: &str) -> Option<&ArrayValues> {
        self.arrays.iter().find(|a| a.name == name)
    }

    /// An array by name, for changing its values.
    pub fn array_mut(&mut self, name: &str) -> Option<&mut ArrayValues> {
        self.arrays.iter_mut().find(|a| a.name == name)
    }

    /// A checksum of every array, in [`Kernel::arrays`] order.
    pub fn checksums(&self) -> Vec<Checksum> {
        self.arrays.iter().map(ArrayValues::checksum).collect()
    }

    /// How each array differs from the same array in `other` (a memory of the same kernel and
    /// parameters).
    pub fn compare(&self, other: &Memory) -> Result<Vec<ArrayDiff>, InterpError> {
        self.check_same_layout(other)?;
        Ok(self
            .arrays
            .iter()
            .zip(&other.arrays)
            .map(|(a, b)| a.diff(b))
            .collect())
    }

    /// Whether every element of every array has the same bits in both memories (NaNs equal).
    pub fn bit_identical(&self, other: &Memory) -> bool {
        self.compare(other)
            .is_ok_and(|diffs| diffs.iter().all(ArrayDiff::is_identical))
    }

    fn check_same_layout(&self, other: &Memory) -> Result<(), InterpError> {
        let same = self.arrays.len() == other.arrays.len()
            && self
                .arrays
                .iter()
                .zip(&other.arrays)
                .all(|(a, b)| a.name == b.name && a.elem == b.elem && a.shape == b.shape);
        if same {
            Ok(())
        } else {
            Err(InterpError::MemoryMismatch {
                reason: "the memories hold different arrays or shapes".into(),
            })
        }
    }
}

fn fill_random(array: &mut ArrayValues, seed: u64) {
    let mut key = [0u8; 32];
    key[..8].copy_from_slice(&seed.to_le_bytes());
    for (k, b) in array.name.bytes().enumerate() {
        // Names longer than 24 bytes fold onto the key; collisions only correlate two arrays.
        key[8 + k % 24] ^= b.rotate_left((k / 24) as u32);
    }
    key[31] ^= array.name.len() as u8;
    let mut rng = ChaCha8Rng::from_seed(key);
    let a = arith(array.elem);
    let float = array.elem.is_float();
    for v in &mut array.values {
        *v = if float {
            a.round(rng.random_range(-1.0..1.0))
        } else {
            rng.random_range(-8..8) as f64
        };
    }
}

/// A summary of one array's contents.
#[derive(Clone, Debug, PartialEq)]
pub struct Checksum {
    /// The array.
    pub name: String,
    /// Its element type.
    pub elem: ElemType,
    /// Its shape.
    pub shape: Vec<usize>,
    /// The sum of its values (in C order, in `f64`).
    pub sum: f64,
    /// FNV-1a 64 of its elements' little-endian bytes in the element type.
    pub hash: u64,
}

impl fmt::Display for Checksum {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let shape: Vec<String> = self.shape.iter().map(usize::to_string).collect();
        write!(
            f,
            "{} {}[{}] sum={:e} hash={:016x}",
            self.name,
            self.elem,
            shape.join(", "),
            self.sum,
            self.hash
        )
    }
}

/// How one array differs between two memories.
#[derive(Clone, Debug, PartialEq)]
pub struct ArrayDiff {
    /// The array.
    pub name: String,
    /// The largest absolute difference of two elements (infinite if one of them is NaN).
    pub max_abs: f64,
    /// The largest difference relative to the larger magnitude of the two elements.
    pub max_rel: f64,
    /// How many elements differ bitwise.
    pub mismatches: usize,
}

impl ArrayDiff {
    /// Whether the two arrays are bit-identical.
    pub fn is_identical(&self) -> bool {
        self.mismatches == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use frontend::ir::{AffExpr, Array, Param, Var};
    use frontend::span::Span;

    fn kernel(arrays: &[(&str, ElemType, Role)]) -> Kernel {
        Kernel {
            name: "k".into(),
            params: vec![Param {
                name: "N".into(),
                default: Some(5),
                span: Span::default(),
            }],
            param_constraints: vec![],
            arrays: arrays
                .iter()
                .map(|&(name, elem, role)| Array {
                    name: name.into(),
                    elem,
                    dims: vec![AffExpr::Var(Var::Param("N".into()))],
                    role,
                    span: Span::default(),
                })
                .collect(),
            body: vec![],
        }
    }

    fn params(k: &Kernel) -> ParamValues {
        ParamValues::resolve(k, &Default::default(), &Default::default()).unwrap()
    }

    #[test]
    fn random_inputs_depend_on_seed_and_name_only() {
        let k1 = kernel(&[
            ("A", ElemType::F16, Role::In),
            ("X", ElemType::I8, Role::InOut),
        ]);
        let k2 = kernel(&[
            ("Z", ElemType::F32, Role::In),
            ("A", ElemType::F16, Role::In),
            ("X", ElemType::I8, Role::InOut),
            ("O", ElemType::F64, Role::Out),
        ]);
        let m1 = Memory::random(&k1, &params(&k1), 7).unwrap();
        let m2 = Memory::random(&k2, &params(&k2), 7).unwrap();
        assert_eq!(m1.array("A"), m2.array("A"));
        assert_eq!(m1.array("X"), m2.array("X"));
        assert_ne!(
            m1.array("A").unwrap().values(),
            m2.array("Z").unwrap().values()
        );
        assert_eq!(m2.array("O").unwrap().values(), &[0.0; 5]);
        let other_seed = Memory::random(&k1, &params(&k1), 8).unwrap();
        assert_ne!(m1.array("A"), other_seed.array("A"));
        for v in m1.array("A").unwrap().values() {
            assert!((-1.0..=1.0).contains(v) && arith(ElemType::F16).round(*v) == *v);
        }
        for v in m1.array("X").unwrap().values() {
            assert!((-8.0..8.0).contains(v) && v.fract() == 0.0);
        }
    }

    #[test]
    fn checksums_and_differences() {
        let k = kernel(&[("A", ElemType::F32, Role::In)]);
        let mut m = Memory::zeroed(&k, &params(&k)).unwrap();
        m.array_mut("A")
            .unwrap()
            .set_values(&[1.0, 2.0, 0.1, 0.0, -0.0])
            .unwrap();
        assert_eq!(m.array("A").unwrap().values()[2], 0.1f32 as f64);
        let text = m.checksums()[0].to_string();
        assert!(
            text.starts_with("A f32[5] sum=3.100000001490116e0 hash="),
            "{text}"
        );
        let mut n = m.clone();
        assert!(m.bit_identical(&n));
        n.array_mut("A")
            .unwrap()
            .set_values(&[1.0, 2.5, 0.1, 0.0, 0.0])
            .unwrap();
        let d = &m.compare(&n).unwrap()[0];
        assert_eq!((d.mismatches, d.max_abs, d.max_rel), (2, 0.5, 0.2));
        assert!(!m.bit_identical(&n));
        assert_ne!(m.checksums()[0].hash, n.checksums()[0].hash);
    }
}
