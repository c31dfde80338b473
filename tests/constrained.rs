//! Constrained decoding on the trained demo model: a required call is a declared call
//! whose arguments hold to a nested schema, and a mask never changes a token it allows.

use k3_constrain::{Constrainer, ReplyConstraint, ReplyShape};
use k3_engine::chat::{
    ChatMode, ChatOptions, ChatSession, ChatTemplate, ResponseFormat, ToolChoice, ToolSpec, TurnInput,
};
use k3_engine::constraint::TokenConstraint;
use k3_engine::tokenizer::Tokenizer;
use k3_engine::{CancelToken, DecodeMode, Engine, GenerateParams, Sampling};
use k3_tests::fixture;
use serde_json::{json, Value};

use crate::gates::{engine, Recorder};

fn weather() -> ToolSpec {
    ToolSpec {
        name: "weather".into(),
        description: Some("The weather in a city on a day".into()),
        parameters: json!({
            "type": "object",
            "properties": {
                "city": {"type": "string", "maxLength": 24},
                "units": {"type": "string", "enum": ["celsius", "fahrenheit"]},
                "when": {
                    "type": "object",
                    "properties": {"day": {"type": "integer", "minimum": 1, "maximum": 31}, "morning": {"type": "boolean"}},
                    "required": ["day", "morning"],
                    "additionalProperties": false
                }
            },
            "required": ["city", "units", "when"]
        }),
    }
}

fn params(n: usize, mode: DecodeMode) -> GenerateParams {
    GenerateParams { max_new_tokens: n, sampling: Sampling::Greedy, stop_ids: vec![], mode }
}

struct Demo {
    engine: Engine,
    tok: Tokenizer,
    constrainer: Constrainer,
}

fn demo(threads: Option<usize>) -> Demo {
    let tok = Tokenizer::load(&fixture("k3-demo")).unwrap();
    let constrainer = Constrainer::new(&tok).expect("the demo vocabulary");
    Demo { engine: engine("k3-demo", threads), tok, constrainer }
}

/// One turn "What is the weather in Bath?" with `options`, greedy, under the reply's
/// constraint when it has one.
fn turn(d: &Demo, options: ChatOptions, mode: DecodeMode, n: usize) -> (k3_engine::chat::ChatReply, Vec<f32>) {
    let mut chat = ChatSession::new(&d.engine, ChatTemplate::builtin(), ChatMode::Instruct, None);
    let tools = options.tools.clone();
    let shape = ReplyShape { mode: ChatMode::Instruct, tools: &tools, options: &options, parallel_calls: false };
    let mut constraint: Option<ReplyConstraint> = d.constrainer.reply(&shape).expect("the schemas compile");
    let input =
        TurnInput { options, call_id_prefix: "call_".into(), ..TurnInput::user("What is the weather in Bath?") };
    let mut rec = Recorder::default();
    let c = constraint.as_mut().map(|c| c as &mut dyn TokenConstraint);
    let reply =
        chat.send_turn(&d.engine, &d.tok, &input, &params(n, mode), c, (&CancelToken::new(), &mut rec)).unwrap();
    (reply, rec.logits)
}

#[test]
fn a_required_call_is_a_declared_call_whose_arguments_hold_to_a_nested_schema() {
    let d = demo(None);
    let options = ChatOptions { tools: vec![weather()], tool_choice: ToolChoice::Required, ..ChatOptions::default() };
    let (reply, _) = turn(&d, options.clone(), DecodeMode::Incremental, 400);
    let raw = d.tok.decode(&reply.generation.generated).unwrap();
    assert_eq!(
        reply.call_error,
        None,
        "{raw:?} {:?} {:?}",
        &reply.generation.generated[reply.generation.generated.len().saturating_sub(5)..],
        reply.generation.finish
    );
    assert_eq!(reply.text, "", "a required call leaves the response empty");
    let [call] = &reply.tool_calls[..] else { panic!("one call: {:?}", reply.tool_calls) };
    assert_eq!((call.tool.as_str(), call.index, call.id.as_str()), ("weather", 1, "call_0"));
    let args: Value = serde_json::from_str(&call.arguments).expect("the arguments are JSON");
    eprintln!("the demo model called weather({})", call.arguments);
    assert!(args["city"].as_str().is_some_and(|c| c.chars().count() <= 24), "{args}");
    assert!(["celsius", "fahrenheit"].contains(&args["units"].as_str().unwrap_or_default()), "{args}");
    let day = args["when"]["day"].as_i64().expect("an integer day");
    assert!((1..=31).contains(&day), "{args}");
    assert!(args["when"]["morning"].is_boolean(), "{args}");
    assert_eq!(args["when"].as_object().map(|o| o.len()), Some(2), "no other key: {args}");
    let end = d.tok.added_id("<|end_of_msg|>").unwrap();
    assert_eq!(reply.generation.generated.last(), Some(&end), "the reply closes its message");

    // The same tokens in speculative decoding, on one thread and on several.
    for (mode, threads) in [(DecodeMode::Speculative { max_draft: 4 }, None), (DecodeMode::Incremental, Some(1))] {
        let other = if threads.is_some() { demo(threads) } else { demo(None) };
        let (again, _) = turn(&other, options.clone(), mode, 400);
        assert_eq!(again.generation.generated, reply.generation.generated, "{mode:?}, {threads:?} threads");
    }
}

#[test]
fn a_mask_that_allows_the_unconstrained_choice_changes_no_token_and_no_logit() {
    let d = demo(None);
    // Tools declared, choice auto: the reply is free text that may end or call.
    let constrained = ChatOptions { tools: vec![weather()], ..ChatOptions::default() };
    let (masked, masked_logits) = turn(&d, constrained.clone(), DecodeMode::Incremental, 48);
    // The same prompt rendered with the same tools, unconstrained.
    let mut chat = ChatSession::new(&d.engine, ChatTemplate::builtin(), ChatMode::Instruct, None);
    let input = TurnInput {
        options: constrained,
        call_id_prefix: "call_".into(),
        ..TurnInput::user("What is the weather in Bath?")
    };
    let mut rec = Recorder::default();
    let free = chat
        .send_turn(
            &d.engine,
            &d.tok,
            &input,
            &params(48, DecodeMode::Incremental),
            None,
            (&CancelToken::new(), &mut rec),
        )
        .unwrap();
    assert_eq!(masked.generation.generated, free.generation.generated);
    assert_eq!(masked_logits, rec.logits, "logits are byte-identical under the mask");
}

#[test]
fn a_json_schema_response_is_valid_json_of_that_schema() {
    let d = demo(None);
    let schema = json!({
        "type": "object",
        "properties": {"name": {"type": "string", "maxLength": 12}, "age": {"type": "integer", "minimum": 0, "maximum": 120}},
        "required": ["name", "age"],
        "additionalProperties": false
    });
    let options = ChatOptions {
        response_format: ResponseFormat::JsonSchema { name: "person".into(), schema },
        ..ChatOptions::default()
    };
    let (reply, _) = turn(&d, options, DecodeMode::Incremental, 80);
    let value: Value = serde_json::from_str(&reply.text).unwrap_or_else(|e| panic!("{:?}: {e}", reply.text));
    eprintln!("the demo model answered {}", reply.text);
    assert!(value["name"].as_str().is_some_and(|n| n.chars().count() <= 12), "{value}");
    assert!(value["age"].as_i64().is_some_and(|a| (0..=120).contains(&a)), "{value}");
}

#[test]
fn a_schema_that_cannot_compile_is_refused_before_any_token() {
    let d = demo(None);
    let bad = ToolSpec {
        name: "f".into(),
        description: None,
        parameters: json!({"type": "object", "properties": {"x": {"type": "integer", "minimum": 5, "maximum": 1}}, "required": ["x"]}),
    };
    let options = ChatOptions { tools: vec![bad], tool_choice: ToolChoice::Required, ..ChatOptions::default() };
    let tools = options.tools.clone();
    let shape = ReplyShape { mode: ChatMode::Instruct, tools: &tools, options: &options, parallel_calls: true };
    let err = d.constrainer.reply(&shape).err().map(|e| e.to_string()).unwrap_or_default();
    assert!(err.contains("cannot be compiled"), "{err:?}");
}
