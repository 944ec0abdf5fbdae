//! The input gradient of a SwiGLU's down projection with the SwiGLU's backward as its epilogue
//! (`matmul_128_swiglu_backward` in matmul.wgsl): d[up | gate] straight from dy, down's weight
//! and [up | gate], so dg = dy·W_down never passes through memory and `silu_gate_backward`
//! needs no dispatch of its own. Fused where the product runs aligned on the 128 tile, unsplit;
//! anywhere else it is the plain product into dg followed by `silu_gate_backward`.

use super::elementwise::silu_gate_backward;
use super::matmul::{aligned, dispatch, matmul_ops, plan, validate, Adapter, Dispatch, MatmulDesc, LEAN, WIDE};
use super::{expect_len, Kernel, MATMUL as F, MATMUL_B16 as F16, R, RW, U};
use crate::error::{KilnError, Result};
use crate::gpu::{Arg::T, Arg::U as Uni, Gpu, Op, Tensor};

/// Bindings as `matmul_128_aligned`'s (binding 2 is d[up | gate]), plus 6: [up | gate].
pub const MATMUL_128_SWIGLU_BACKWARD: Kernel = Kernel { entry: "matmul_128_swiglu_backward", family: F, bindings: &[R, R, RW, U, R, R, R] };
/// The same with down's weight as packed f16 (mixed precision).
pub const MATMUL_128_SWIGLU_BACKWARD_B16: Kernel = Kernel { entry: "matmul_128_swiglu_backward_b16", family: F16, bindings: &[R, R, RW, U, R, R, R] };

pub const KERNELS: &[&Kernel] = &[&MATMUL_128_SWIGLU_BACKWARD, &MATMUL_128_SWIGLU_BACKWARD_B16];

/// Whether `desc` runs as one fused dispatch on `adapter`: unsplit on the 128 tile (or the lean
/// or wide one, which it replaces here), aligned to it.
pub fn fuses(desc: &MatmulDesc, adapter: Adapter) -> bool {
    let (tile, splits, k_chunk) = plan(desc, true, adapter);
    (tile == 128 || tile == LEAN || tile == WIDE) && splits == 1 && aligned(desc, 128, k_chunk)
}

/// The input gradient of one product shape, for every block of a model: `desc` is dg (rows, F)
/// = dy (rows, C) · W (C, F), plain, unbatched, not accumulating (W may be packed f16).
pub struct SwigluInputGrad {
    desc: MatmulDesc,
    /// (rows, F) dy·W, shared by every block: only where the product does not fuse.
    dg: Option<Tensor>,
}

impl SwigluInputGrad {
    pub fn new(gpu: &Gpu, desc: MatmulDesc) -> Result<SwigluInputGrad> {
        if desc.accumulate || desc.batch != 1 || desc.trans_a || desc.trans_b {
            return Err(KilnError::invalid("desc", "the SwiGLU input gradient is one plain product dy·W that does not accumulate"));
        }
        let dg = if fuses(&desc, Adapter::of(gpu)) { None } else { Some(gpu.tensor("dg", &[desc.m, desc.n])?) };
        Ok(SwigluInputGrad { desc, dg })
    }

    /// d_up_gate (rows, 2F) = silu_gate_backward(up_gate (rows, 2F), dy·W): one dispatch, or
    /// the product into dg and `silu_gate_backward`.
    pub fn ops(&self, gpu: &Gpu, dy: &Tensor, w: &Tensor, up_gate: &Tensor, d_up_gate: &Tensor) -> Result<Vec<Op>> {
        let (desc, hidden) = (self.desc, self.desc.n);
        expect_len(up_gate, desc.m * 2 * hidden, "up_gate (rows, 2F)")?;
        expect_len(d_up_gate, desc.m * 2 * hidden, "d_up_gate (rows, 2F)")?;
        let Some(dg) = &self.dg else {
            // A view of d_up_gate's first (rows, F) only checks the operands against desc.
            validate(gpu, dy, w, &d_up_gate.view("dg", 0, vec![desc.m, hidden]), &desc)?;
            let Dispatch { uniform, groups, .. } = dispatch(gpu, &desc, 128, 1, desc.k)?;
            let kernel = if desc.b_f16 { &MATMUL_128_SWIGLU_BACKWARD_B16 } else { &MATMUL_128_SWIGLU_BACKWARD };
            return Ok(vec![gpu.op(kernel, &[T(dy), T(w), T(d_up_gate), Uni(&uniform), T(dy), T(w), T(up_gate)], groups)?]);
        };
        let mut ops = matmul_ops(gpu, dy, w, dg, desc)?;
        ops.push(silu_gate_backward(gpu, up_gate, dg, d_up_gate, hidden)?);
        Ok(ops)
    }
}
