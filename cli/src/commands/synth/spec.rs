//! The [`SynthSpec`] `k3 synth`'s flags describe, applied in order: the preset, `--config`,
//! `--layers` (which resets the MLA layers, so before `--full-attn-layers`), the single
//! values, `--bf16-experts`, then `--seed`.

use k3_synth::{self as synth, ExpertStorage, SynthSpec};

use crate::args::SynthArgs;
use crate::commands::{input_error, parse_ids, read_regular, Failure};

/// The largest `--config` read (a config.json is a few KB).
const MAX_CONFIG_BYTES: u64 = 16 << 20;

/// The spec the flags describe: preset, then `--config`, then single values, then `--seed`.
pub(super) fn spec(args: &SynthArgs) -> Result<SynthSpec, Failure> {
    let mut s = SynthSpec::preset(&args.preset)?;
    if let Some(path) = &args.config {
        let bytes = read_regular("--config", path, MAX_CONFIG_BYTES)?;
        synth::apply_json(&mut s, &bytes, path)?;
    }
    if let Some(n) = args.layers {
        s.set_layers(n).map_err(|reason| input_error(format!("--layers: {reason}")))?;
    }
    if let Some(csv) = &args.full_attn_layers {
        s.full_attn_layers = parse_ids("--full-attn-layers", csv)?.into_iter().map(|x| x as usize).collect();
    }
    let sizes = [
        (args.hidden, &mut s.hidden_size),
        (args.vocab, &mut s.vocab_size),
        (args.experts, &mut s.num_experts),
        (args.top_k, &mut s.num_experts_per_token),
        (args.shared_experts, &mut s.num_shared_experts),
        (args.latent, &mut s.routed_expert_hidden_size),
        (args.expert_intermediate, &mut s.moe_intermediate_size),
        (args.dense_intermediate, &mut s.intermediate_size),
        (args.kda_heads, &mut s.kda_num_heads),
        (args.kda_head_dim, &mut s.kda_head_dim),
        (args.mla_heads, &mut s.num_attention_heads),
        (args.block_size, &mut s.attn_res_block_size),
    ];
    for (flag, slot) in sizes {
        if let Some(v) = flag {
            *slot = v;
        }
    }
    if args.bf16_experts {
        s.expert_storage = ExpertStorage::Bf16;
    }
    if let Some(seed) = args.seed {
        s.seed = seed;
    }
    Ok(s)
}
