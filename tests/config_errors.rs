//! Malformed configs: each case mutates one thing of a real fixture config and must be
//! refused with the right error variant naming the field; none may panic.

use std::path::Path;

use k3_io::config::ModelConfig;
use k3_io::Error;
use k3_tests::fixture;
use serde_json::{json, Value};

fn base(name: &str) -> Value {
    serde_json::from_slice(&std::fs::read(fixture(name).join("config.json")).unwrap()).unwrap()
}

fn parse(v: &Value) -> Result<ModelConfig, Error> {
    ModelConfig::from_json(v.to_string().as_bytes(), Path::new("config.json"))
}

/// The nested (released) config with `edit` applied to `text_config`.
fn nested(edit: impl FnOnce(&mut serde_json::Map<String, Value>)) -> Value {
    let mut v = base("tiny-mxfp4");
    edit(v["text_config"].as_object_mut().unwrap());
    v
}

/// The nested config with `edit` applied to `text_config.linear_attn_config`.
fn linear(edit: impl FnOnce(&mut serde_json::Map<String, Value>)) -> Value {
    nested(|t| edit(t.get_mut("linear_attn_config").unwrap().as_object_mut().unwrap()))
}

fn expect_missing(v: Value, fields: &[&str]) {
    match parse(&v) {
        Err(Error::ConfigMissing { fields: got, .. }) => {
            for f in fields {
                assert!(got.iter().any(|g| g.starts_with(f)), "missing list {got:?} lacks {f}");
            }
            assert_eq!(got.len(), fields.len(), "missing list {got:?}");
        }
        other => panic!("expected ConfigMissing {fields:?}, got {other:?}"),
    }
}

fn expect_type(v: Value, field: &str) {
    match parse(&v) {
        Err(Error::ConfigType { field: got, .. }) => assert_eq!(got, field),
        other => panic!("expected ConfigType for {field}, got {other:?}"),
    }
}

fn expect_invalid(v: Value, field: &str, says: &str) {
    match parse(&v) {
        Err(e @ Error::ConfigInvalid { .. }) => {
            let Error::ConfigInvalid { field: got, .. } = &e else { unreachable!() };
            assert_eq!(got, field, "{e}");
            assert!(e.to_string().contains(says), "message `{e}` should mention `{says}`");
        }
        other => panic!("expected ConfigInvalid for {field}, got {other:?}"),
    }
}

fn expect_syntax(bytes: &[u8]) {
    match ModelConfig::from_json(bytes, Path::new("config.json")) {
        Err(e @ Error::ConfigSyntax { .. }) => assert!(e.to_string().contains("config.json"), "{e}"),
        other => panic!("expected ConfigSyntax, got {other:?}"),
    }
}

#[test]
fn both_fixture_forms_parse_to_the_same_layer_map() {
    let nested = parse(&base("tiny-mxfp4")).unwrap();
    let flat = parse(&base("tiny-f32")).unwrap();
    assert_eq!(nested.layer_map(), "KKKMKKKMKKKMM");
    assert_eq!(flat.layer_map(), nested.layer_map());
    assert_eq!((flat.kda.n_heads, flat.kda.head_dim), (nested.kda.n_heads, nested.kda.head_dim));
    assert_eq!(flat.moe.expert_intermediate, 48);
    // The flat form wrapped in {"config": ...} (the oracle files) reads the same.
    assert_eq!(parse(&json!({ "config": base("tiny-f32") })).unwrap(), flat);
}

#[test]
fn missing_fields_are_all_named_at_once() {
    expect_missing(nested(|t| drop(t.remove("hidden_size"))), &["hidden_size"]);
    expect_missing(
        nested(|t| {
            t.remove("vocab_size");
            t.remove("moe_intermediate_size");
            t.get_mut("linear_attn_config").unwrap().as_object_mut().unwrap().remove("num_heads");
        }),
        &["vocab_size", "num_heads", "moe_intermediate_size"],
    );
    expect_missing(linear(|l| drop(l.remove("full_attn_layers"))), &["full_attn_layers"]);
    let mut flat = base("tiny-f32");
    flat.as_object_mut().unwrap().remove("situ_beta");
    expect_missing(flat, &["activation_situ_beta"]);
}

#[test]
fn wrong_types_are_refused_naming_the_field() {
    expect_type(nested(|t| drop(t.insert("hidden_size".into(), json!("128")))), "hidden_size");
    expect_type(nested(|t| drop(t.insert("num_hidden_layers".into(), json!(13.0)))), "num_hidden_layers");
    expect_type(nested(|t| drop(t.insert("num_experts".into(), Value::Null))), "num_experts");
    expect_type(nested(|t| drop(t.insert("rms_norm_eps".into(), json!("1e-5")))), "rms_norm_eps");
    expect_type(nested(|t| drop(t.insert("mla_use_output_gate".into(), json!("yes")))), "mla_use_output_gate");
    expect_type(nested(|t| drop(t.insert("first_k_dense_replace".into(), json!(true)))), "first_k_dense_replace");
    expect_type(linear(|l| drop(l.insert("full_attn_layers".into(), json!([4, "8", 12, 13])))), "full_attn_layers");
    expect_type(linear(|l| drop(l.insert("full_attn_layers".into(), json!(4)))), "full_attn_layers");
}

#[test]
fn invalid_values_are_refused_naming_the_field() {
    expect_invalid(nested(|t| drop(t.insert("vocab_size".into(), json!(0)))), "vocab_size", "range");
    expect_invalid(nested(|t| drop(t.insert("num_hidden_layers".into(), json!(-1)))), "num_hidden_layers", "range");
    expect_invalid(nested(|t| drop(t.insert("num_experts".into(), json!(1_000_000_000)))), "num_experts", "range");
    expect_invalid(
        nested(|t| drop(t.insert("num_experts_per_token".into(), json!(9)))),
        "num_experts_per_token",
        "num_experts 8",
    );
    expect_invalid(
        nested(|t| {
            t.insert("num_experts".into(), json!(100));
            t.insert("num_experts_per_token".into(), json!(65));
        }),
        "num_experts_per_token",
        "limit 64",
    );
    expect_invalid(nested(|t| drop(t.insert("attn_res_block_size".into(), json!(0)))), "attn_res_block_size", "range");
    expect_invalid(
        linear(|l| drop(l.insert("short_conv_kernel_size".into(), json!(0)))),
        "short_conv_kernel_size",
        "range",
    );
    expect_invalid(linear(|l| drop(l.insert("gate_lower_bound".into(), json!(5.0)))), "gate_lower_bound", "negative");
    expect_invalid(
        nested(|t| drop(t.insert("first_k_dense_replace".into(), json!(14)))),
        "first_k_dense_replace",
        "exceeds",
    );
}

#[test]
fn layer_map_errors_say_the_list_is_one_based() {
    expect_invalid(
        linear(|l| drop(l.insert("full_attn_layers".into(), json!([])))),
        "full_attn_layers",
        "at least one",
    );
    expect_invalid(
        linear(|l| drop(l.insert("full_attn_layers".into(), json!([0, 4, 8])))),
        "full_attn_layers",
        "one-based",
    );
    expect_invalid(
        linear(|l| drop(l.insert("full_attn_layers".into(), json!([4, 8, 14])))),
        "full_attn_layers",
        "one-based",
    );
    expect_invalid(
        linear(|l| drop(l.insert("full_attn_layers".into(), json!((1..=13).collect::<Vec<_>>())))),
        "full_attn_layers",
        "no KDA",
    );
    expect_invalid(
        linear(|l| drop(l.insert("full_attn_layers".into(), json!([4, 4, 8])))),
        "full_attn_layers",
        "twice",
    );
    expect_invalid(linear(|l| drop(l.insert("kda_layers".into(), json!([1, 2, 3])))), "kda_layers", "complement");
}

#[test]
fn unsupported_variants_are_refused() {
    expect_invalid(
        linear(|l| drop(l.insert("use_full_rank_gate".into(), json!(false)))),
        "use_full_rank_gate",
        "not supported",
    );
    expect_invalid(
        nested(|t| drop(t.insert("tie_word_embeddings".into(), json!(true)))),
        "tie_word_embeddings",
        "not supported",
    );
    // issue 13 / RELIABILITY CF-06: another architecture or dtype is named, not run.
    expect_invalid(nested(|t| drop(t.insert("model_type".into(), json!("llama")))), "text_config.model_type", "llama");
    let mut v = base("tiny-mxfp4");
    v["model_type"] = json!("deepseek_v3");
    expect_invalid(v, "model_type", "unsupported architecture `deepseek_v3`");
    let mut v = base("tiny-mxfp4");
    v["torch_dtype"] = json!("float8");
    expect_invalid(v, "torch_dtype", "unsupported dtype `float8`");
    let mut v = base("tiny-mxfp4");
    v["quantization_config"] = json!({ "group_size": 64 });
    v["text_config"]["quantization_config"] = json!({ "group_size": 64 });
    expect_invalid(v, "quantization_config.group_size", "32");
}

#[test]
fn broken_json_is_refused_with_position() {
    expect_syntax(b"");
    expect_syntax(b"[1, 2]");
    expect_syntax(b"{\"hidden_size\": 128, \"hidden_size\": 256}");
    expect_syntax(b"{\"hidden_size\": 128,}");
    expect_syntax(b"{\"rms_norm_eps\": NaN}");
    expect_syntax(b"{\"rms_norm_eps\": 1e400}");
    expect_syntax(b"\xef\xbb\xbf{\"hidden_size\": 128}");
    expect_syntax(b"{\"hidden_size\": 128} trailing");
    expect_syntax(&[b'{', 0xff, 0xfe, b'}']);
}

#[test]
fn oversized_config_file_is_refused_before_parsing() {
    let dir = k3_tests::scratch_dir("bigcfg");
    let path = dir.join("config.json");
    std::fs::write(&path, vec![b' '; (1 << 20) + 1]).unwrap();
    match ModelConfig::load(&path) {
        Err(e @ Error::ConfigSyntax { .. }) => assert!(e.to_string().contains("cap"), "{e}"),
        other => panic!("expected ConfigSyntax for a 1 MiB+ file, got {other:?}"),
    }
    match ModelConfig::load(&dir) {
        Err(Error::ConfigSyntax { .. }) => {}
        other => panic!("expected a directory to be refused, got {other:?}"),
    }
}

/// The released K3 values (spec §2.2) in the nested form: 93 layers, MLA at the one-based
/// multiples of 4 plus 93, so zero-based 3, 7, …, 91 and 92.
#[test]
fn released_k3_config_gives_the_published_layer_map() {
    let mut v = base("tiny-mxfp4");
    let full: Vec<u32> = (1..=23).map(|i| 4 * i).chain([93]).collect();
    let kda: Vec<u32> = (1..=93).filter(|i| !full.contains(i)).collect();
    for (key, value) in [
        ("hidden_size", json!(7168)),
        ("num_hidden_layers", json!(93)),
        ("vocab_size", json!(163_840)),
        ("num_attention_heads", json!(96)),
        ("q_lora_rank", json!(1536)),
        ("kv_lora_rank", json!(512)),
        ("qk_nope_head_dim", json!(128)),
        ("qk_rope_head_dim", json!(64)),
        ("v_head_dim", json!(128)),
        ("num_experts", json!(896)),
        ("num_experts_per_token", json!(16)),
        ("routed_expert_hidden_size", json!(3584)),
        ("moe_intermediate_size", json!(3072)),
        ("intermediate_size", json!(33_792)),
        ("attn_res_block_size", json!(12)),
    ] {
        v["text_config"][key] = value;
    }
    let lin = &mut v["text_config"]["linear_attn_config"];
    lin["num_heads"] = json!(96);
    lin["head_dim"] = json!(128);
    lin["full_attn_layers"] = json!(full);
    lin["kda_layers"] = json!(kda);
    let cfg = parse(&v).unwrap();
    let map = cfg.layer_map();
    assert_eq!(map.len(), 93);
    assert_eq!(map.matches('M').count(), 24);
    assert!(map.starts_with("KKKMKKKM") && map.ends_with("KKKMM"), "{map}");
    let boundaries: Vec<usize> = (0..93).filter(|&l| cfg.is_block_boundary(l)).collect();
    assert_eq!(boundaries, vec![0, 12, 24, 36, 48, 60, 72, 84]);
    assert_eq!((cfg.moe.shared_intermediate(), cfg.mla.qk_head_dim()), (6144, 192));
}
