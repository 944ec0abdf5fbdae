//! A product's operand checks, before anything is dispatched: its dimensions, and that A, B
//! and C cover the batches their strides describe (or B is one packed-f16 matrix), each error
//! naming the operand or field at fault.

use super::matmul::MatmulDesc;
use crate::error::{KilnError, Result};
use crate::gpu::{Gpu, Tensor};

pub(super) fn validate(gpu: &Gpu, a: &Tensor, b: &Tensor, c: &Tensor, d: &MatmulDesc) -> Result<()> {
    for (v, field) in [(d.m, "m"), (d.n, "n"), (d.k, "k"), (d.batch, "batch")] {
        if v == 0 {
            return Err(KilnError::invalid(field, "matmul dimensions must be at least 1"));
        }
    }
    check_span(a, d.m * d.k, d.stride_a, d.batch, "a", "stride_a")?;
    if d.b_f16 {
        check_packed_b(b, d)?;
    } else {
        check_span(b, d.k * d.n, d.stride_b, d.batch, "b", "stride_b")?;
    }
    check_span(c, d.m * d.n, d.stride_c, d.batch, "c", "stride_c")?;
    if d.batch > 1 && d.stride_c < d.m * d.n {
        return Err(KilnError::invalid("stride_c", format!("batches of C would overlap: stride {} < m*n = {}", d.stride_c, d.m * d.n)));
    }
    let max_dim = gpu.limits().max_compute_workgroups_per_dimension as usize;
    if d.batch > max_dim {
        return Err(KilnError::invalid("batch", format!("at most {max_dim} batches per dispatch, got {}", d.batch)));
    }
    Ok(())
}

/// A packed-f16 B holds exactly one matrix of halves, even-sized batches aside: `ceil(k·n / 2)`
/// words (batches and custom strides are for f32 operands).
fn check_packed_b(b: &Tensor, d: &MatmulDesc) -> Result<()> {
    if d.batch != 1 {
        return Err(KilnError::invalid("b_f16", "a packed-f16 B takes one product (batch 1)"));
    }
    let words = (d.k * d.n).div_ceil(2);
    if b.len() != words {
        let msg = format!("operand `b` (packed f16): expected {words} words for {} halves, found {}", d.k * d.n, b.len());
        return Err(KilnError::invalid(b.name(), msg));
    }
    Ok(())
}

/// Checks that `t` covers `batch` matrices of `size` elements spaced `stride` apart.
fn check_span(t: &Tensor, size: usize, stride: usize, batch: usize, what: &str, stride_field: &str) -> Result<()> {
    let span = (batch - 1) * stride + size;
    if stride == size {
        if t.len() != span {
            let msg = format!("operand `{what}`: expected {span} elements ({batch} x {size}), found {} (shape {:?})", t.len(), t.shape());
            return Err(KilnError::invalid(t.name(), msg));
        }
    } else if t.len() < span {
        let msg = format!("operand `{what}` with {stride_field} = {stride}: needs at least {span} elements, found {}", t.len());
        return Err(KilnError::invalid(t.name(), msg));
    }
    if span > u32::MAX as usize {
        return Err(KilnError::invalid(stride_field, "indices exceed 32 bits"));
    }
    Ok(())
}
