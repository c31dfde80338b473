//! The JSON calls natively: released-model plans carry the figures the CLI tests know,
//! refusals name their variant and numbers, presets come in order, forecasts and `auto`
//! are k3-plan's own.

use k3_plan::{auto_budget_for, released_footprint, MachineMemory, GB};
use serde_json::{json, Value};

use super::*;

fn released() -> Value {
    serde_json::from_str(&released_footprint_call()).expect("footprint JSON")
}

fn call(f: fn(&[u8]) -> String, input: Value) -> Value {
    serde_json::from_str(&f(input.to_string().as_bytes())).expect("answer is JSON")
}

fn plan_of(choice: Value) -> Value {
    let machine = json!({"total_bytes": 64 * GB, "available_bytes": 48 * GB});
    let input = json!({"footprint": released(), "machine": machine, "choice": choice,
        "streamed_trunk": true, "context_length": 4096, "io_threads": 4});
    call(plan_call, input)
}

#[test]
fn the_released_footprint_round_trips_through_json() {
    let parsed: FootprintJson = serde_json::from_value(released()).expect("FootprintJson");
    assert_eq!(Footprint::from(parsed), released_footprint());
}

#[test]
fn laptop_on_the_released_model_streams_every_layer_with_56_expert_slots() {
    let v = plan_of(json!("laptop"));
    let p = &v["plan"];
    assert_eq!(
        (p["layers"].as_u64(), p["pinned_layers"].as_u64(), p["ring_slots"].as_u64()),
        (Some(93), Some(0), Some(1))
    );
    assert_eq!(p["cache_slots"], 56);
    assert_eq!(p["budget"], json!({"trunk_bytes": 3 * GB, "cache_bytes": GB}));
    assert_eq!(p["mem_available_bytes"], 48 * GB);
    assert_eq!(p["fits"], true);
    assert!(v.get("forecast").is_none(), "no rates, no forecast: {v}");
}

#[test]
fn a_cache_budget_below_top_k_plus_one_slots_is_refused_with_its_numbers() {
    let v = plan_of(json!({"trunk_bytes": 3 * GB, "cache_bytes": 100_000_000u64}));
    let e = &v["error"];
    assert_eq!(e["kind"], "CacheBudgetTooSmall", "{v}");
    assert_eq!(e["budget_bytes"], 100_000_000u64);
    assert_eq!(e["minimum_slots"], 17);
    assert_eq!(e["minimum_bytes"], 17 * e["slot_bytes"].as_u64().expect("slot_bytes"));
    assert!(e["message"].as_str().is_some_and(|m| m.contains("cache budget")), "{e}");
}

#[test]
fn bad_requests_are_refused_by_name() {
    assert_eq!(plan_of(json!("huge"))["error"]["kind"], "UnknownPreset");
    assert_eq!(plan_of(json!({"trunk_bytes": 1}))["error"]["kind"], "BadRequest");
    assert_eq!(call(plan_call, json!({"footprint": 1}))["error"]["kind"], "BadRequest");
    let mut input = json!({"footprint": released(), "machine": {"total_bytes": 0, "available_bytes": 0},
        "choice": "laptop", "streamed_trunk": true, "context_length": 0, "io_threads": 4});
    assert_eq!(call(plan_call, input.clone())["error"]["kind"], "ContextLength");
    input["context_length"] = json!(4096);
    input["io_threads"] = json!(257);
    assert_eq!(call(plan_call, input)["error"]["kind"], "IoThreads");
}

#[test]
fn auto_plans_the_budget_k3_plan_resolves_for_the_machine() {
    let v = plan_of(json!("auto"));
    let machine = MachineMemory::new(64 * GB, 48 * GB);
    let budget = auto_budget_for(&released_footprint(), machine, 4096).expect("auto fits 48 GB");
    assert_eq!(v["plan"]["budget"], json!({"trunk_bytes": budget.trunk_bytes, "cache_bytes": budget.cache_bytes}));
}

#[test]
fn presets_come_in_order_with_custom_last_and_forecasts_are_k3_plans() {
    let rates = json!({"disk_trunk_bytes_per_second": 2e9, "disk_expert_bytes_per_second": 1e9,
        "bf16_bytes_per_second": 20e9, "expert_bytes_per_second": 10e9});
    let input = json!({"footprint": released(), "machine": {"total_bytes": 0, "available_bytes": 0},
        "custom": {"trunk_bytes": 20 * GB, "cache_bytes": 5 * GB},
        "streamed_trunk": true, "context_length": 4096, "io_threads": 4, "rates": rates});
    let v = call(presets_call, input);
    let rows = v["presets"].as_array().expect("presets");
    let names: Vec<&str> = rows.iter().filter_map(|r| r["preset"].as_str()).collect();
    assert_eq!(names, ["ultra", "laptop", "desktop", "workstation", "server", "max", "auto", "custom"]);
    // No machine figures: auto has nothing to size from.
    assert_eq!(rows[6]["error"]["kind"], "AutoTooSmall", "{}", rows[6]);
    assert_eq!(rows[1]["plan"]["mem_available_bytes"], Value::Null);
    let fp = released_footprint();
    let req =
        MemoryRequest { choice: Preset::Laptop.choice(), streamed_trunk: true, context_length: 4096, io_threads: 4 };
    let plan = plan_memory(&fp, &req, MachineMemory::new(0, 0), false).expect("laptop plan");
    let rates: RatesJson = serde_json::from_value(rates).expect("rates");
    let input = ForecastInput {
        footprint: &fp,
        plan: &plan,
        trunk_streamed: true,
        disk: rates.disk(),
        rates: rates.compute(),
        coding: None,
    };
    let expected = ForecastJson::from(&k3_plan::forecast(&input).expect("forecast"));
    let got: ForecastJson = serde_json::from_value(rows[1]["forecast"].clone()).expect("forecast JSON");
    assert_eq!(got, expected);
    assert!(got.seconds_per_token.low <= got.seconds_per_token.high);
}

#[test]
fn a_rate_that_is_not_positive_is_a_forecast_error() {
    let input = json!({"footprint": released(), "machine": {"total_bytes": 0, "available_bytes": 0},
        "choice": "laptop", "streamed_trunk": true, "context_length": 4096, "io_threads": 4,
        "rates": {"disk_trunk_bytes_per_second": 0.0, "disk_expert_bytes_per_second": 1e9,
            "bf16_bytes_per_second": 1e9, "expert_bytes_per_second": 1e9}});
    assert_eq!(call(plan_call, input)["error"]["kind"], "Forecast");
}

#[test]
fn an_unknown_field_is_a_bad_request_not_ignored() {
    let mut input = json!({"footprint": released(), "machine": {"total_bytes": 0, "available_bytes": 0},
        "choice": "laptop", "streamed_trunk": true, "context_length": 4096, "io_threads": 4});
    assert!(call(plan_call, input.clone()).get("plan").is_some());
    input["rate"] = json!({});
    assert_eq!(call(plan_call, input.clone())["error"]["kind"], "BadRequest", "a misspelt `rates`");
    input.as_object_mut().map(|o| o.remove("rate"));
    input["custom"] = json!({"trunk_bytes": 1, "cache_bytes": 1});
    assert_eq!(call(plan_call, input)["error"]["kind"], "BadRequest", "`custom` belongs to presets_call");
}
