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

use std::collections::HashMap;
use std::sync::Arc;

use crate::error::{Error, Result};
use crate::format::{Dtype, TensorIndex, TensorInfo};
use crate::io::{Blob, ByteView};
use crate::model::matrix::{Matrix, MatrixData};
use crate::model::names::{self, ExpertProj};
use crate::model::weight::{PieceRef, Weight};

/// One layer's trunk bytes already in memory: the run `[run_start, …)` of shard
/// `shard_idx`, held at `payload_start` of `blob`.
#[derive(Clone)]
pub struct RunView {
    pub blob: Arc<Blob>,
    pub payload_start: usize,
    /// Bytes of the run from `payload_start` (the blob may be a larger reused buffer).
    pub payload_len: usize,
    pub shard_idx: usize,
    pub run_start: u64,
}

/// Where tensor bytes come from.
#[derive(Clone)]
enum Source {
    /// Validation pass: shapes and dtypes are checked, nothing is read.
    Validate,
    /// Each tensor read into its own aligned blob (resident weights).
    ReadEach,
    /// Views into a run already read (a streamed trunk layer).
    Run(RunView),
    /// A layer streamed in pieces: its small tensors read on their own, its matrices
    /// pieces read when used.
    Pieces(Arc<PieceBinding>),
}

/// One layer of a trunk streamed in pieces, as the binder sees it.
pub struct PieceBinding {
    /// The tensors read with the layer (norms, gains, small tensors), each in its own buffer.
    pub eager: HashMap<String, ByteView>,
    /// The matrices read when used.
    pub pieces: HashMap<String, PieceRef>,
}

/// Reads typed tensors out of a [`TensorIndex`].
pub struct Binder<'a> {
    index: &'a TensorIndex,
    source: Source,
}

impl<'a> Binder<'a> {
    /// `read_data = false` validates only; `true` reads every tensor into RAM.
    pub fn new(index: &'a TensorIndex, read_data: bool) -> Self {
        Binder { index, source: if read_data { Source::ReadEach } else { Source::Validate } }
    }

    /// Binds tensors of one layer as views into `run` (no copies of matrices).
    pub fn over_run(index: &'a TensorIndex, run: RunView) -> Self {
        Binder { index, source: Source::Run(run) }
    }

    /// Binds tensors of one layer streamed in pieces.
    pub fn over_pieces(index: &'a TensorIndex, pieces: Arc<PieceBinding>) -> Self {
        Binder { index, source: Source::Pieces(pieces) }
    }

    fn info(&self, name: &str) -> Result<&'a TensorInfo> {
        self.index.get(name).ok_or_else(|| Error::MissingTensor { name: name.to_string() })
    }

    fn bytes(&self, info: &TensorInfo) -> Result<ByteView> {
        match &self.source {
            Source::Validate => Ok(ByteView::whole(Arc::new(Blob::zeroed(0)))),
            Source::ReadEach => {
                let mut blob = Blob::zeroed(info.nbytes as usize);
                self.index.read_into(info, blob.bytes_mut())?;
                Ok(ByteView::whole(Arc::new(blob)))
            }
            Source::Run(run) => {
                let outside =
                    || Error::Expert { name: info.name.clone(), reason: "tensor lies outside its layer's run".into() };
                if info.shard_idx != run.shard_idx
                    || info.offset < run.run_start
                    || info.offset + info.nbytes > run.run_start + run.payload_len as u64
                {
                    return Err(outside());
                }
                let start = run.payload_start + (info.offset - run.run_start) as usize;
                ByteView::new(run.blob.clone(), start, info.nbytes as usize).ok_or_else(outside)
            }
            Source::Pieces(binding) => binding.eager.get(&info.name).cloned().ok_or_else(|| Error::Trunk {
                path: info.name.clone().into(),
                reason:
                    "a piece of its layer was bound as a small tensor (the layer's piece set and its binding disagree)"
                        .into(),
            }),
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

    /// A trunk matrix `[rows, cols]`, BF16 or F32: held, or a piece when its layer streams
    /// in pieces and the piece set names it.
    pub fn weight(&self, name: &str, rows: usize, cols: usize) -> Result<Weight> {
        if let Source::Pieces(binding) = &self.source {
            if let Some(at) = binding.pieces.get(name) {
                let info = self.info(name)?;
                Self::require_float(info)?;
                if info.shape != [rows as u64, cols as u64] {
                    return Err(Self::shape_error(info, &[rows, cols]));
                }
                return Ok(Weight::Piece { at: at.clone(), rows, cols });
            }
        }
        self.matrix(name, rows, cols).map(Weight::Held)
    }

    fn float_data(&self, info: &TensorInfo) -> Result<MatrixData> {
        let raw = self.bytes(info)?;
        Ok(match info.dtype {
            Dtype::BF16 => MatrixData::Bf16(raw.aligned_for::<u16>()),
            _ => MatrixData::F32(raw.aligned_for::<f32>()),
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
        let view = self.bytes(info)?;
        let raw = view.bytes();
        let mut values = match info.dtype {
            Dtype::BF16 => {
                raw.chunks_exact(2).map(|b| f32::from_bits(u32::from(u16::from_le_bytes([b[0], b[1]])) << 16)).collect()
            }
            _ => f32_values(raw),
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
