//! Binding released tensors to typed weights, with shapes checked before data is read.
//!
//! Owns: the dtype and shape rules of spec §6.4 (every matrix and vector BF16 or F32;
//! AttnRes projections `[1, E]` or `[E]`; `A_log` of length ≥ H; routed experts as MXFP4
//! pairs or unquantised F32/BF16) and the conversion of raw bytes into [`Matrix`] and
//! f32 vectors.
//! Must not: accept a transposed matrix (same element count, wrong shape), or read a
//! tensor before its shape and dtype were checked.
//! Easy to break: the model is bound twice, first with `read_data = false` so that every
//! tensor of the whole model is validated before a single weight byte is read.

use crate::error::{Error, Result};
use crate::format::{Dtype, TensorIndex, TensorInfo};
use crate::model::matrix::{Matrix, MatrixData};
use crate::model::names::{self, ExpertProj};

/// Reads typed tensors out of a [`TensorIndex`].
pub struct Binder<'a> {
    index: &'a TensorIndex,
    /// False during the validation pass: shapes and dtypes are checked, nothing is read.
    read_data: bool,
}

impl<'a> Binder<'a> {
    pub fn new(index: &'a TensorIndex, read_data: bool) -> Self {
        Binder { index, read_data }
    }

    fn info(&self, name: &str) -> Result<&'a TensorInfo> {
        self.index.get(name).ok_or_else(|| Error::MissingTensor { name: name.to_string() })
    }

    fn bytes(&self, info: &TensorInfo) -> Result<Vec<u8>> {
        if self.read_data {
            self.index.read(info)
        } else {
            Ok(Vec::new())
        }
    }

    fn shape_error(info: &TensorInfo, expected: &[usize]) -> Error {
        Error::Shape {
            name: info.name.clone(),
            expected: expected.iter().map(|&d| d as u64).collect(),
            got: info.shape.clone(),
        }
    }

    fn require_float(info: &TensorInfo) -> Result<()> {
        match info.dtype {
            Dtype::BF16 | Dtype::F32 => Ok(()),
            other => Err(Error::Dtype { name: info.name.clone(), expected: "BF16 or F32", got: other.to_string() }),
        }
    }

    /// A `[rows, cols]` BF16 or F32 matrix.
    pub fn matrix(&self, name: &str, rows: usize, cols: usize) -> Result<Matrix> {
        let info = self.info(name)?;
        Self::require_float(info)?;
        if info.shape != [rows as u64, cols as u64] {
            return Err(Self::shape_error(info, &[rows, cols]));
        }
        let data = self.float_data(info)?;
        Ok(Matrix::new(rows, cols, data))
    }

    fn float_data(&self, info: &TensorInfo) -> Result<MatrixData> {
        let raw = self.bytes(info)?;
        Ok(match info.dtype {
            Dtype::BF16 => MatrixData::Bf16(raw.chunks_exact(2).map(|b| u16::from_le_bytes([b[0], b[1]])).collect()),
            _ => MatrixData::F32(f32_values(&raw)),
        })
    }

    /// A BF16 or F32 vector of exactly `len` elements and shape `[len]`.
    pub fn vector(&self, name: &str, len: usize) -> Result<Vec<f32>> {
        self.vector_shaped(name, &[&[len]], len)
    }

    /// A vector whose shape is one of `shapes`, widened to f32; keeps the first `keep`.
    fn vector_shaped(&self, name: &str, shapes: &[&[usize]], keep: usize) -> Result<Vec<f32>> {
        let info = self.info(name)?;
        Self::require_float(info)?;
        let ok = shapes
            .iter()
            .any(|s| s.len() == info.shape.len() && s.iter().zip(&info.shape).all(|(&a, &b)| a as u64 == b));
        if !ok {
            return Err(Self::shape_error(info, shapes[0]));
        }
        let raw = self.bytes(info)?;
        let mut values = match info.dtype {
            Dtype::BF16 => {
                raw.chunks_exact(2).map(|b| f32::from_bits(u32::from(u16::from_le_bytes([b[0], b[1]])) << 16)).collect()
            }
            _ => f32_values(&raw),
        };
        values.truncate(keep);
        Ok(values)
    }

    /// An AttnRes projection: `[1, E]` or `[E]`.
    pub fn attn_res_proj(&self, name: &str, hidden: usize) -> Result<Vec<f32>> {
        self.vector_shaped(name, &[&[1, hidden], &[hidden]], hidden)
    }

    /// `A_log`: length H or more (the release pads 96 heads to 128); the first H are used.
    pub fn a_log(&self, name: &str, n_heads: usize) -> Result<Vec<f32>> {
        let info = self.info(name)?;
        match info.shape.as_slice() {
            [len] if *len >= n_heads as u64 && *len <= (n_heads as u64).saturating_mul(16) => {
                self.vector_shaped(name, &[&[*len as usize]], n_heads)
            }
            _ => Err(Self::shape_error(info, &[n_heads])),
        }
    }

    /// A depthwise conv weight `[channels, 1, kernel]`, as `[channels][kernel]` f32.
    pub fn conv(&self, name: &str, channels: usize, kernel: usize) -> Result<Vec<f32>> {
        self.vector_shaped(name, &[&[channels, 1, kernel]], channels * kernel)
    }

    /// One routed-expert matrix, `[rows, cols]` logical: MXFP4 pair or unquantised.
    pub fn expert_matrix(
        &self,
        layer_idx: usize,
        expert_idx: usize,
        proj: ExpertProj,
        rows: usize,
        cols: usize,
    ) -> Result<Matrix> {
        let plain = names::expert(layer_idx, expert_idx, proj, "weight");
        if self.index.get(&plain).is_some() {
            return self.matrix(&plain, rows, cols);
        }
        let packed_name = names::expert(layer_idx, expert_idx, proj, "weight_packed");
        let scale_name = names::expert(layer_idx, expert_idx, proj, "weight_scale");
        if self.index.get(&packed_name).is_none() {
            return Err(Error::MissingTensor { name: plain });
        }
        let packed = self.info(&packed_name)?;
        let scales = self.info(&scale_name)?;
        if !cols.is_multiple_of(32) {
            return Err(Error::Expert {
                name: packed_name,
                reason: format!("MXFP4 needs a logical width divisible by 32, the config gives {cols}"),
            });
        }
        for (info, width) in [(packed, cols / 2), (scales, cols / 32)] {
            if info.dtype != Dtype::U8 {
                return Err(Error::Dtype { name: info.name.clone(), expected: "U8", got: info.dtype.to_string() });
            }
            if info.shape != [rows as u64, width as u64] {
                return Err(Self::shape_error(info, &[rows, width]));
            }
        }
        let data = MatrixData::Mxfp4 { packed: self.bytes(packed)?, scales: self.bytes(scales)? };
        Ok(Matrix::new(rows, cols, data))
    }
}

/// Little-endian f32 values from raw bytes.
fn f32_values(raw: &[u8]) -> Vec<f32> {
    raw.chunks_exact(4).map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]])).collect()
}
