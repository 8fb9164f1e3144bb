//! Element encoding: little-endian bytes of each [`DType`] to and from numbers.
//! Stores round to nearest (ties to even) and saturate integers; NaN stores as 0 in integers.

use crate::program::DType;
use half::{bf16, f16};

/// Decodes `bytes` (a whole number of elements) as f64 values.
pub fn load(dtype: DType, bytes: &[u8]) -> Vec<f64> {
    match dtype {
        DType::F32 => bytes
            .chunks_exact(4)
            .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]) as f64)
            .collect(),
        DType::I32 => bytes
            .chunks_exact(4)
            .map(|b| i32::from_le_bytes([b[0], b[1], b[2], b[3]]) as f64)
            .collect(),
        DType::F16 => bytes
            .chunks_exact(2)
            .map(|b| f16::from_bits(u16::from_le_bytes([b[0], b[1]])).to_f64())
            .collect(),
        DType::Bf16 => bytes
            .chunks_exact(2)
            .map(|b| bf16::from_bits(u16::from_le_bytes([b[0], b[1]])).to_f64())
            .collect(),
        DType::I8 => bytes.iter().map(|&b| b as i8 as f64).collect(),
    }
}

/// Decodes 16-bit float or f32 elements as f32, fast (for the cube).
pub fn load_f32(dtype: DType, bytes: &[u8]) -> Vec<f32> {
    match dtype {
        DType::F16 => bytes
            .chunks_exact(2)
            .map(|b| f16::from_bits(u16::from_le_bytes([b[0], b[1]])).to_f32())
            .collect(),
        DType::Bf16 => bytes
            .chunks_exact(2)
            .map(|b| bf16::from_bits(u16::from_le_bytes([b[0], b[1]])).to_f32())
            .collect(),
        DType::F32 => bytes
            .chunks_exact(4)
            .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
            .collect(),
        _ => load(dtype, bytes).into_iter().map(|v| v as f32).collect(),
    }
}

/// Decodes integer elements as i32 (for the cube's integer path).
pub fn load_i32(dtype: DType, bytes: &[u8]) -> Vec<i32> {
    match dtype {
        DType::I8 => bytes.iter().map(|&b| b as i8 as i32).collect(),
        DType::I32 => bytes
            .chunks_exact(4)
            .map(|b| i32::from_le_bytes([b[0], b[1], b[2], b[3]]))
            .collect(),
        _ => load(dtype, bytes).into_iter().map(|v| v as i32).collect(),
    }
}

/// Encodes one value into `out` (exactly one element's bytes).
pub fn store_one(dtype: DType, v: f64, out: &mut [u8]) {
    let sat = |lo: f64, hi: f64| {
        if v.is_nan() {
            0.0
        } else {
            v.round_ties_even().clamp(lo, hi)
        }
    };
    match dtype {
        DType::F32 => out.copy_from_slice(&(v as f32).to_le_bytes()),
        DType::F16 => out.copy_from_slice(&f16::from_f64(v).to_bits().to_le_bytes()),
        DType::Bf16 => out.copy_from_slice(&bf16::from_f64(v).to_bits().to_le_bytes()),
        DType::I32 => {
            out.copy_from_slice(&(sat(i32::MIN as f64, i32::MAX as f64) as i32).to_le_bytes())
        }
        DType::I8 => out[0] = sat(-128.0, 127.0) as i8 as u8,
    }
}

/// Encodes values into `out` (exactly `values.len()` elements).
pub fn store(dtype: DType, values: &[f64], out: &mut [u8]) {
    let size = dtype.size() as usize;
    for (v, o) in values.iter().zip(out.chunks_exact_mut(size)) {
        store_one(dtype, *v, o);
    }
}

/// Encodes f32 values (the cube's accumulators).
pub fn store_f32(values: &[f32], out: &mut [u8]) {
    for (v, o) in values.iter().zip(out.chunks_exact_mut(4)) {
        o.copy_from_slice(&v.to_le_bytes());
    }
}

/// Encodes i32 values.
pub fn store_i32(values: &[i32], out: &mut [u8]) {
    for (v, o) in values.iter().zip(out.chunks_exact_mut(4)) {
        o.copy_from_slice(&v.to_le_bytes());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_and_rounds_and_saturates() {
        for dt in DType::ALL {
            let vals = [0.0, 1.0, -2.0, 3.0];
            let mut buf = vec![0u8; 4 * dt.size() as usize];
            store(*dt, &vals, &mut buf);
            assert_eq!(load(*dt, &buf), vals, "{dt}");
        }
        let mut b = [0u8; 1];
        store_one(DType::I8, 300.0, &mut b);
        assert_eq!(b[0] as i8, 127);
        store_one(DType::I8, 2.5, &mut b);
        assert_eq!(b[0] as i8, 2);
        let mut h = [0u8; 2];
        store_one(DType::F16, 1.0 + 1.0 / 4096.0, &mut h);
        assert_eq!(load(DType::F16, &h), vec![1.0]);
    }
}
