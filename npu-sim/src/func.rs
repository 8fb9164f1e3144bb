//! Functional semantics: what each instruction does to memory, with real values.
//! Vector arithmetic is computed in f64 and rounded once to the destination type; the cube
//! multiplies f16/bf16 in f32 (accumulating in f32) and i8 in i32.

use crate::elem;
use crate::expand::{Exec, Fractals, Inst, Operand};
use crate::layout::lanes;
use crate::machine::Machine;
use crate::memory::Memory;
use crate::program::*;

/// Executes one instruction of `core` on memory. Bounds were checked at expansion.
pub fn execute(mem: &mut Memory, core: u32, inst: &Inst, p: &Program, m: &Machine) {
    match &inst.exec {
        Exec::Dma(d, z) => dma(mem, core, d, z, &inst.operands[0], &inst.operands[1]),
        Exec::Load3d(_, z) => load3d(mem, core, z, &inst.operands[0], &inst.operands[1]),
        Exec::Mmad(_, z, init) => mmad(mem, core, z, *init, &inst.operands),
        Exec::Vector(v, z) => vector(mem, core, v, z, &inst.operands, lanes(p, m, v)),
        Exec::Control => {}
    }
}

fn dma(mem: &mut Memory, core: u32, d: &Dma, z: &DmaSizes<u64>, dst: &Operand, src: &Operand) {
    let (ss, ds) = (src.dtype.size() as usize, dst.dtype.size() as usize);
    let (rows, cols) = (z.count as usize, z.len as usize);
    // The `count x len` matrix the transfer moves, row-major, in the source type.
    let mut data = Vec::with_capacity(rows * cols * ss);
    if d.mode == DmaMode::Nz2nd {
        let nz = Nz::new(src, z.src_stride);
        for r in 0..rows {
            for c in 0..cols {
                let at = src.addr + (nz.element(r, c) * ss) as u64;
                data.extend_from_slice(mem.read(core, src.space, at, ss as u64));
            }
        }
    } else {
        for i in 0..z.count {
            let at = src.addr + i * z.src_stride * ss as u64;
            data.extend_from_slice(mem.read(core, src.space, at, z.len * ss as u64));
        }
    }
    if src.dtype != dst.dtype || d.relu {
        let mut vals = elem::load(src.dtype, &data);
        if d.relu {
            vals.iter_mut().for_each(|v| *v = v.max(0.0));
        }
        data = vec![0; vals.len() * ds];
        elem::store(dst.dtype, &vals, &mut data);
    }
    match d.mode {
        DmaMode::Nd2nz => {
            // The fractal columns as written, back to back: `count` rows rounded up to 16,
            // zero beyond the matrix; in the destination they are `dst_stride` rows apart.
            let packed = Nz::new(dst, z.count.next_multiple_of(FRACTAL_ROWS));
            let column = packed.rows * packed.c0 * ds;
            let mut out = vec![0u8; z.len.div_ceil(packed.c0 as u64) as usize * column];
            for r in 0..rows {
                for c in 0..cols {
                    let at = packed.element(r, c) * ds;
                    out[at..][..ds].copy_from_slice(&data[(r * cols + c) * ds..][..ds]);
                }
            }
            let stride = z.dst_stride * packed.c0 as u64 * ds as u64;
            for (fc, chunk) in out.chunks_exact(column).enumerate() {
                mem.write(core, dst.space, dst.addr + fc as u64 * stride, chunk);
            }
        }
        DmaMode::Transpose => {
            // Every burst is one square fractal, written transposed.
            let side = FRACTAL_ROWS as usize;
            for (i, f) in data.chunks_exact(cols * ds).enumerate() {
                let mut t = vec![0; f.len()];
                for r in 0..side {
                    for c in 0..side {
                        t[(c * side + r) * ds..][..ds]
                            .copy_from_slice(&f[(r * side + c) * ds..][..ds]);
                    }
                }
                let at = dst.addr + i as u64 * z.dst_stride * ds as u64;
                mem.write(core, dst.space, at, &t);
            }
        }
        DmaMode::Plain | DmaMode::Nz2nd => {
            for (i, chunk) in data.chunks_exact(cols * ds).enumerate() {
                let at = dst.addr + i as u64 * z.dst_stride * ds as u64;
                if d.atomic {
                    let old =
                        elem::load(dst.dtype, mem.read(core, dst.space, at, chunk.len() as u64));
                    let sum: Vec<f64> = (old.iter().zip(elem::load(dst.dtype, chunk)))
                        .map(|(a, b)| a + b)
                        .collect();
                    let mut out = vec![0; chunk.len()];
                    elem::store(dst.dtype, &sum, &mut out);
                    mem.write(core, dst.space, at, &out);
                } else {
                    mem.write(core, dst.space, at, chunk);
                }
            }
        }
    }
}

/// The NZ layout of a matrix in one operand: fractal columns of `c0` columns, `rows` rows
/// apart, each row-major.
struct Nz {
    rows: usize,
    c0: usize,
}

impl Nz {
    fn new(o: &Operand, rows: u64) -> Nz {
        Nz {
            rows: rows as usize,
            c0: fractal_cols(o.dtype, o.tier()) as usize,
        }
    }
    /// The element index of (r, c).
    fn element(&self, r: usize, c: usize) -> usize {
        ((c / self.c0) * self.rows + r) * self.c0 + c % self.c0
    }
}

/// `load3d`: the window of the im2col matrix, as zZ fractals.
fn load3d(mem: &mut Memory, core: u32, z: &Load3dSizes<u64>, dst: &Operand, src: &Operand) {
    let e = src.dtype.size() as usize;
    let c0 = fractal_cols(src.dtype, None) as usize;
    let img = mem
        .read(core, src.space, src.addr, z.h * z.w * z.c * e as u64)
        .to_vec();
    let (oh, ow) = z.out_hw();
    let (h, w, kh, kw) = (z.h as i64, z.w as i64, z.kh as usize, z.kw as usize);
    let (m_ext, k_ext) = (z.m_ext as usize, z.k_ext as usize);
    let mut out = vec![0u8; m_ext * k_ext * e];
    for r in 0..m_ext {
        let pos = z.m_start + r as u64;
        if pos >= oh * ow {
            continue;
        }
        let (oy, ox) = ((pos / ow) as i64, (pos % ow) as i64);
        for q in 0..k_ext {
            let col = z.k_start as usize + q;
            let (c1, rest) = (col / (kh * kw * c0), col % (kh * kw * c0));
            let (ky, kx, ci) = (rest / (kw * c0), rest / c0 % kw, rest % c0);
            let iy = oy * z.stride as i64 + ky as i64 - z.pad_top as i64;
            let ix = ox * z.stride as i64 + kx as i64 - z.pad_left as i64;
            if !(0..h).contains(&iy) || !(0..w).contains(&ix) {
                continue;
            }
            let from = ((c1 as i64 * h + iy) * w + ix) as usize * c0 + ci;
            let to = ((r / 16) * (k_ext / c0) + q / c0) * 16 * c0 + (r % 16) * c0 + q % c0;
            out[to * e..][..e].copy_from_slice(&img[from * e..][..e]);
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

fn mmad(mem: &mut Memory, core: u32, z: &MmadSizes<u64>, init: bool, ops: &[Operand]) {
    let (c, a, b) = (&ops[0], &ops[1], &ops[2]);
    let f = Fractals::of(z, a.dtype);
    let (m, k, n) = (z.m as usize, z.k as usize, z.n as usize);
    let (ka, k1, n1, m1) = (f.ka as usize, f.k1 as usize, f.n1 as usize, f.m1 as usize);
    // zZ: fractals row-major, each row-major; nZ: fractals row-major, each column-major;
    // NZ (C): 16 x 16 fractals column-major, each row-major.
    let a_at = |i: usize, kk: usize| ((i / 16) * k1 + kk / ka) * 16 * ka + (i % 16) * ka + kk % ka;
    let b_at = |kk: usize, j: usize| ((kk / ka) * n1 + j / 16) * ka * 16 + (j % 16) * ka + kk % ka;
    let c_at = |i: usize, j: usize| ((j / 16) * m1 + i / 16) * 256 + (i % 16) * 16 + j % 16;
    let a_bytes = mem.read(
        core,
        a.space,
        a.addr,
        f.m1 * f.k1 * 16 * f.ka * a.dtype.size(),
    );
    let b_bytes = mem.read(
        core,
        b.space,
        b.addr,
        f.k1 * f.n1 * f.ka * 16 * b.dtype.size(),
    );
    let c_len = f.m1 * f.n1 * 256 * 4;
    let mut out = if init {
        vec![0u8; c_len as usize]
    } else {
        mem.read(core, c.space, c.addr, c_len).to_vec()
    };
    /// Row-major copies of the three operands from their fractal layouts, multiplied.
    fn product<T: Copy + Default + std::ops::Mul<Output = T> + std::ops::AddAssign>(
        (a, b, c): (Vec<T>, Vec<T>, Vec<T>),
        (m, k, n): (usize, usize, usize),
        (a_at, b_at, c_at): (
            impl Fn(usize, usize) -> usize,
            impl Fn(usize, usize) -> usize,
            impl Fn(usize, usize) -> usize,
        ),
        init: bool,
    ) -> Vec<T> {
        let ar: Vec<T> = (0..m * k).map(|x| a[a_at(x / k, x % k)]).collect();
        let br: Vec<T> = (0..k * n).map(|x| b[b_at(x / n, x % n)]).collect();
        let mut cr: Vec<T> = if init {
            vec![T::default(); m * n]
        } else {
            (0..m * n).map(|x| c[c_at(x / n, x % n)]).collect()
        };
        matmul_acc(&mut cr, &ar, &br, m, k, n);
        let mut whole = c;
        for (x, v) in cr.into_iter().enumerate() {
            whole[c_at(x / n, x % n)] = v;
        }
        whole
    }
    if a.dtype == DType::I8 {
        let ops = (
            elem::load_i32(a.dtype, a_bytes),
            elem::load_i32(b.dtype, b_bytes),
            elem::load_i32(DType::I32, &out),
        );
        let whole = product(ops, (m, k, n), (a_at, b_at, c_at), init);
        elem::store_i32(&whole, &mut out);
    } else {
        let ops = (
            elem::load_f32(a.dtype, a_bytes),
            elem::load_f32(b.dtype, b_bytes),
            elem::load_f32(DType::F32, &out),
        );
        let whole = product(ops, (m, k, n), (a_at, b_at, c_at), init);
        elem::store_f32(&whole, &mut out);
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
    if op.holds(a, b) {
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
