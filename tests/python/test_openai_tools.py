"""A tool loop through the official `openai` Python client against `k3 serve` on the demo
model (issue 39): a required call whose arguments validate against a nested schema, the
same call streamed and assembled by the client, the result sent back as a tool message
and the answer; a json_schema response; and the 400s an agent can cause.

Run by cli/tests/integration/serve.rs with K3_BASE_URL and K3_MODEL; prints "openai tools: N checks
passed" and exits 0, or raises.
"""

import json
import os
import pathlib

import openai
from openai import OpenAI

# The weather tool's schema, shared with test_anthropic_client.py.
SCHEMA = json.loads((pathlib.Path(__file__).parent / "weather_schema.json").read_text())
WEATHER = {
    "type": "function",
    "function": {"name": "weather", "description": "The weather in a city on a day", "parameters": SCHEMA},
}


def valid_weather_arguments(text: str) -> dict:
    args = json.loads(text)
    assert isinstance(args["city"], str) and len(args["city"]) <= 24, args
    assert args["units"] in ("celsius", "fahrenheit"), args
    assert isinstance(args["when"]["day"], int) and 1 <= args["when"]["day"] <= 31, args
    assert isinstance(args["when"]["morning"], bool), args
    assert set(args["when"]) == {"day", "morning"}, args
    return args


def expect_400(call, param: str) -> None:
    try:
        call()
    except openai.BadRequestError as e:
        body = e.body if isinstance(e.body, dict) else {}
        assert body.get("param") == param, (param, e.body)
        return
    raise AssertionError(f"expected a 400 naming {param}")


def main() -> None:
    client = OpenAI(base_url=os.environ["K3_BASE_URL"], api_key="dummy-key", max_retries=0, timeout=120)
    model = os.environ["K3_MODEL"]
    checks = 0
    messages = [{"role": "user", "content": "What is the weather in Bath?"}]

    # A required call, whole.
    first = client.chat.completions.create(
        model=model, messages=messages, tools=[WEATHER], tool_choice="required",
        parallel_tool_calls=False, temperature=0, max_tokens=400,
    )
    choice = first.choices[0]
    assert choice.finish_reason == "tool_calls", choice
    [call] = choice.message.tool_calls
    assert call.type == "function" and call.function.name == "weather", call
    valid_weather_arguments(call.function.arguments)
    checks += 1

    # The same call streamed: the client assembles the deltas into the same call.
    stream = client.chat.completions.create(
        model=model, messages=messages, tools=[WEATHER], tool_choice="required",
        parallel_tool_calls=False, temperature=0, max_tokens=400, stream=True,
    )
    calls, finish = {}, None
    for chunk in stream:
        if not chunk.choices:
            continue
        delta = chunk.choices[0].delta
        for piece in delta.tool_calls or []:
            slot = calls.setdefault(piece.index, {"id": None, "name": "", "arguments": ""})
            slot["id"] = piece.id or slot["id"]
            if piece.function and piece.function.name:
                slot["name"] += piece.function.name
            if piece.function and piece.function.arguments:
                slot["arguments"] += piece.function.arguments
        finish = chunk.choices[0].finish_reason or finish
    assert finish == "tool_calls", finish
    assert list(calls) == [0], calls
    assert calls[0]["name"] == "weather" and calls[0]["arguments"] == call.function.arguments, (calls, call)
    checks += 1

    # The result goes back; the model answers (the history it sends back is reused).
    follow = messages + [
        {"role": "assistant", "content": None, "tool_calls": [call.model_dump()]},
        {"role": "tool", "tool_call_id": call.id, "content": "Rain, 12 degrees."},
    ]
    answer = client.chat.completions.create(
        model=model, messages=follow, tools=[WEATHER], tool_choice="none", temperature=0, max_tokens=24,
    )
    assert answer.choices[0].finish_reason in ("stop", "length"), answer.choices[0]
    assert not answer.choices[0].message.tool_calls
    checks += 1

    # The next user turn extends what the server holds: only the new part is prefilled.
    # (A one-shot option — the tool choice above — sits after the input messages, so the
    # turn after it is rendered without it and re-reads that turn.)
    more = follow + [
        {"role": "assistant", "content": answer.choices[0].message.content},
        {"role": "user", "content": "And tomorrow?"},
    ]
    again = client.chat.completions.create(model=model, messages=more, tools=[WEATHER], temperature=0, max_tokens=8)
    assert again.usage.prompt_tokens_details.cached_tokens > 0, again.usage
    assert again.usage.prefilled_tokens < again.usage.prompt_tokens, again.usage
    checks += 1

    # A json_schema response is valid JSON of its schema.
    person = {
        "type": "object",
        "properties": {"name": {"type": "string", "maxLength": 12}, "age": {"type": "integer", "minimum": 0, "maximum": 120}},
        "required": ["name", "age"],
        "additionalProperties": False,
    }
    reply = client.chat.completions.create(
        model=model, messages=[{"role": "user", "content": "Who are you?"}], temperature=0, max_tokens=80,
        response_format={"type": "json_schema", "json_schema": {"name": "person", "schema": person}},
    )
    value = json.loads(reply.choices[0].message.content)
    assert isinstance(value["name"], str) and 0 <= value["age"] <= 120, value
    checks += 1

    # The 400s an agent can cause name their field.
    bad_schema = {"type": "function", "function": {"name": "f", "parameters": {
        "type": "object", "properties": {"x": {"type": "integer", "minimum": 5, "maximum": 1}}, "required": ["x"]}}}
    for param, kwargs in [
        ("tools", {"tools": [WEATHER, WEATHER]}),
        ("tools", {"tools": [{"type": "function", "function": {"description": "no name"}}]}),
        ("tools", {"tools": [bad_schema], "tool_choice": "required"}),
        ("tool_choice", {"tool_choice": {"type": "function", "function": {"name": "nope"}}, "tools": [WEATHER]}),
        ("reasoning_effort", {"reasoning_effort": "medium"}),
        ("messages", {"messages": messages + [{"role": "tool", "tool_call_id": "unknown", "content": "x"}]}),
    ]:
        kwargs.setdefault("messages", messages)
        expect_400(lambda: client.chat.completions.create(model=model, max_tokens=4, **kwargs), param)
        checks += 1

    print(f"openai tools: {checks} checks passed")


if __name__ == "__main__":
    main()
