//! Functional semantics: what each instruction does to memory, with real values.
//! Vector arithmetic is computed in f64 and rounded once to the destination type; the cube
//! multiplies f16/bf16 in f32 (accumulating in f32) and i8 in i32.

use crate::elem;
use crate::expand::{Exec, Inst, Operand};
use crate::layout::lanes;
use crate::machine::Machine;
use crate::memory::Memory;
use crate::program::*;

/// Executes one instruction of `core` on memory. Bounds were checked at expansion.
pub fn execute(mem: &mut Memory, core: u32, inst: &Inst, p: &Program, m: &Machine) {
    match &inst.exec {
        Exec::Dma(d, z) => dma(mem, core, d, z, &inst.operands[0], &inst.operands[1]),
        Exec::Im2col(_, z) => im2col(mem, core, z, &inst.operands[0], &inst.operands[1]),
        Exec::Mmad(_, z, init) => mmad(mem, core, z, *init, &inst.operands),
        Exec::Vector(v, z) => vector(mem, core, v, z, &inst.operands, lanes(p, m, v)),
        Exec::Control => {}
    }
}

fn dma(mem: &mut Memory, core: u32, d: &Dma, z: &DmaSizes<u64>, dst: &Operand, src: &Operand) {
    let (ss, ds) = (src.dtype.size(), dst.dtype.size());
    let mut data = Vec::with_capacity((z.count * z.len * ss) as usize);
    for i in 0..z.count {
        data.extend_from_slice(mem.read(
            core,
            src.space,
            src.addr + i * z.src_stride * ss,
            z.len * ss,
        ));
    }
    if src.dtype != dst.dtype || d.relu {
        let mut vals = elem::load(src.dtype, &data);
        if d.relu {
            vals.iter_mut().for_each(|v| *v = v.max(0.0));
        }
        data = vec![0; vals.len() * ds as usize];
        elem::store(dst.dtype, &vals, &mut data);
    }
    if d.transpose {
        let (rows, cols, e) = (z.count as usize, z.len as usize, ds as usize);
        let mut t = vec![0; data.len()];
        for r in 0..rows {
            for c in 0..cols {
                t[(c * rows + r) * e..][..e].copy_from_slice(&data[(r * cols + c) * e..][..e]);
            }
        }
        mem.write(core, dst.space, dst.addr, &t);
        return;
    }
    let burst = (z.len * ds) as usize;
    for (i, chunk) in data.chunks_exact(burst).enumerate() {
        let at = dst.addr + i as u64 * z.dst_stride * ds;
        if d.atomic {
            let old = elem::load(dst.dtype, mem.read(core, dst.space, at, burst as u64));
            let sum: Vec<f64> = (old.iter().zip(elem::load(dst.dtype, chunk)))
                .map(|(a, b)| a + b)
                .collect();
            let mut out = vec![0; burst];
            elem::store(dst.dtype, &sum, &mut out);
            mem.write(core, dst.space, at, &out);
        } else {
            mem.write(core, dst.space, at, chunk);
        }
    }
}

fn im2col(mem: &mut Memory, core: u32, op: &Im2colSizes<u64>, dst: &Operand, src: &Operand) {
    let e = src.dtype.size() as usize;
    let img = mem
        .read(core, src.space, src.addr, op.h * op.w * op.c * e as u64)
        .to_vec();
    let (oh, ow) = op.out_hw();
    let row = (op.kh * op.kw * op.c) as usize * e;
    let mut out = vec![0u8; (oh * ow) as usize * row];
    for oy in 0..oh {
        for ox in 0..ow {
            let base = (oy * ow + ox) as usize * row;
            for ky in 0..op.kh {
                for kx in 0..op.kw {
                    let iy = (oy * op.stride + ky) as i64 - op.pad as i64;
                    let ix = (ox * op.stride + kx) as i64 - op.pad as i64;
                    if iy < 0 || ix < 0 || iy >= op.h as i64 || ix >= op.w as i64 {
                        continue;
                    }
                    let from = ((iy as u64 * op.w + ix as u64) * op.c) as usize * e;
                    let to = base + ((ky * op.kw + kx) * op.c) as usize * e;
                    let n = op.c as usize * e;
                    out[to..to + n].copy_from_slice(&img[from..from + n]);
                }
            }
        }
    }
    mem.write(core, dst.space, dst.addr, &out);
}

/// `c[m x n] += a[m x k] * b[k x n]`, row-major, the inner loop over contiguous `n`.
pub fn matmul_acc<T: Copy + std::ops::Mul<Output = T> + std::ops::AddAssign>(
    c: &mut [T],
    a: &[T],
    b: &[T],
    m: usize,
    k: usize,
    n: usize,
) {
    for i in 0..m {
        let crow = &mut c[i * n..(i + 1) * n];
        for (kk, &av) in a[i * k..(i + 1) * k].iter().enumerate() {
            let brow = &b[kk * n..(kk + 1) * n];
            for (cv, &bv) in crow.iter_mut().zip(brow) {
                *cv += av * bv;
            }
        }
    }
}

fn mmad(mem: &mut Memory, core: u32, op: &MmadSizes<u64>, init: bool, ops: &[Operand]) {
    let (c, a, b) = (&ops[0], &ops[1], &ops[2]);
    let (mm, k, n) = (op.m as usize, op.k as usize, op.n as usize);
    let a_bytes = mem.read(core, a.space, a.addr, op.m * op.k * a.dtype.size());
    let b_bytes = mem.read(core, b.space, b.addr, op.k * op.n * b.dtype.size());
    let c_len = op.m * op.n * 4;
    let mut out = vec![0u8; c_len as usize];
    if a.dtype == DType::I8 {
        let (av, bv) = (
            elem::load_i32(a.dtype, a_bytes),
            elem::load_i32(b.dtype, b_bytes),
        );
        let mut acc = if init {
            vec![0; mm * n]
        } else {
            elem::load_i32(DType::I32, mem.read(core, c.space, c.addr, c_len))
        };
        matmul_acc(&mut acc, &av, &bv, mm, k, n);
        elem::store_i32(&acc, &mut out);
    } else {
        let (av, bv) = (
            elem::load_f32(a.dtype, a_bytes),
            elem::load_f32(b.dtype, b_bytes),
        );
        let mut acc = if init {
            vec![0.0; mm * n]
        } else {
            elem::load_f32(DType::F32, mem.read(core, c.space, c.addr, c_len))
        };
        matmul_acc(&mut acc, &av, &bv, mm, k, n);
        elem::store_f32(&acc, &mut out);
    }
    mem.write(core, c.space, c.addr, &out);
}

/// An element-wise binary operation.
pub fn binary(op: BinaryOp, a: f64, b: f64) -> f64 {
    match op {
        BinaryOp::Add => a + b,
        BinaryOp::Sub => a - b,
        BinaryOp::Mul => a * b,
        BinaryOp::Div => a / b,
        BinaryOp::Max => a.max(b),
        BinaryOp::Min => a.min(b),
    }
}

/// An element-wise unary operation.
pub fn unary(op: UnaryOp, a: f64) -> f64 {
    match op {
        UnaryOp::Exp => a.exp(),
        UnaryOp::Ln => a.ln(),
        UnaryOp::Sqrt => a.sqrt(),
        UnaryOp::Rsqrt => 1.0 / a.sqrt(),
        UnaryOp::Abs => a.abs(),
        UnaryOp::Relu => a.max(0.0),
        UnaryOp::Rec => 1.0 / a,
        UnaryOp::Mov => a,
    }
}

/// An operation with a scalar immediate.
pub fn scalar(op: ScalarOp, a: f64, s: f64) -> f64 {
    match op {
        ScalarOp::Adds => a + s,
        ScalarOp::Muls => a * s,
        ScalarOp::Maxs => a.max(s),
        ScalarOp::Mins => a.min(s),
    }
}

/// A comparison: 1 or 0.
pub fn compare(op: CmpOp, a: f64, b: f64) -> f64 {
    let r = match op {
        CmpOp::Lt => a < b,
        CmpOp::Le => a <= b,
        CmpOp::Gt => a > b,
        CmpOp::Ge => a >= b,
        CmpOp::Eq => a == b,
        CmpOp::Ne => a != b,
    };
    if r {
        1.0
    } else {
        0.0
    }
}

/// A reduction of the active lanes.
pub fn reduce(op: ReduceOp, xs: &[f64]) -> f64 {
    match op {
        ReduceOp::Sum => xs.iter().sum(),
        ReduceOp::Max => xs.iter().copied().fold(f64::NEG_INFINITY, f64::max),
        ReduceOp::Min => xs.iter().copied().fold(f64::INFINITY, f64::min),
    }
}

fn vector(
    mem: &mut Memory,
    core: u32,
    v: &Vector,
    z: &VectorSizes<u64>,
    ops: &[Operand],
    lanes: u64,
) {
    let active = z.mask.unwrap_or(lanes);
    let dst = &ops[0];
    let bcast = matches!(v.op, VecOp::Bcast { .. });
    let reduce_op = matches!(v.op, VecOp::Reduce { .. });
    let dst_rs = z.dst_rs.unwrap_or(if reduce_op { 1 } else { lanes });
    let mut out_bytes = vec![0u8; (active * dst.dtype.size()) as usize];
    for r in 0..z.repeat {
        let srcs: Vec<Vec<f64>> = ops[1..]
            .iter()
            .enumerate()
            .map(|(k, o)| {
                let rs = z.src_rs[k].unwrap_or(if bcast { 1 } else { lanes });
                let n = if bcast { 1 } else { active };
                elem::load(
                    o.dtype,
                    mem.read(
                        core,
                        o.space,
                        o.addr + r * rs * o.dtype.size(),
                        n * o.dtype.size(),
                    ),
                )
            })
            .collect();
        let lane = |i: usize| -> f64 {
            match &v.op {
                VecOp::Binary { op, .. } => binary(*op, srcs[0][i], srcs[1][i]),
                VecOp::Unary { op, .. } => unary(*op, srcs[0][i]),
                VecOp::Scalar { op, value, .. } => scalar(*op, srcs[0][i], *value),
                VecOp::Dup { value } => *value,
                VecOp::Bcast { .. } => srcs[0][0],
                VecOp::Cmp { op, .. } => compare(*op, srcs[0][i], srcs[1][i]),
                VecOp::Select { .. } => {
                    if srcs[0][i] != 0.0 {
                        srcs[1][i]
                    } else {
                        srcs[2][i]
                    }
                }
                VecOp::Conv { .. } => srcs[0][i],
                VecOp::Reduce { .. } => 0.0,
            }
        };
        let results: Vec<f64> = match &v.op {
            VecOp::Reduce { op, .. } => vec![reduce(*op, &srcs[0])],
            _ => (0..active as usize).map(lane).collect(),
        };
        let out = &mut out_bytes[..results.len() * dst.dtype.size() as usize];
        elem::store(dst.dtype, &results, out);
        mem.write(
            core,
            dst.space,
            dst.addr + r * dst_rs * dst.dtype.size(),
            out,
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matmul_matches_the_definition() {
        let (m, k, n) = (3, 4, 5);
        let a: Vec<f32> = (0..m * k).map(|x| x as f32 * 0.5).collect();
        let b: Vec<f32> = (0..k * n).map(|x| 1.0 - x as f32).collect();
        let mut c = vec![1.0f32; m * n];
        matmul_acc(&mut c, &a, &b, m, k, n);
        for i in 0..m {
            for j in 0..n {
                let want: f32 = 1.0 + (0..k).map(|kk| a[i * k + kk] * b[kk * n + j]).sum::<f32>();
                assert_eq!(c[i * n + j], want);
            }
        }
    }

    #[test]
    fn scalar_semantics() {
        assert_eq!(binary(BinaryOp::Max, 1.0, -2.0), 1.0);
        assert_eq!(unary(UnaryOp::Rsqrt, 4.0), 0.5);
        assert_eq!(scalar(ScalarOp::Mins, 3.0, 2.0), 2.0);
        assert_eq!(compare(CmpOp::Ge, 2.0, 2.0), 1.0);
        assert_eq!(reduce(ReduceOp::Max, &[1.0, 5.0, -3.0]), 5.0);
        assert_eq!(reduce(ReduceOp::Sum, &[1.0, 5.0, -3.0]), 3.0);
    }
}
