"""A tool loop through Anthropic's official Python client against `k3 serve`'s
`/v1/messages` on the demo model (issue 39): a required tool_use whose input validates
against a nested schema, whole and streamed (the client's own stream assembly), the
tool_result sent back and the answer, `count_tokens` equal to what the reply fed, `x-api-key` and `anthropic-version` as the client
sends them, and a refusal in Anthropic's error shape.

Run by cli/tests/integration/serve.rs with K3_BASE_URL (http://127.0.0.1:PORT), K3_MODEL and K3_KEY;
prints "anthropic client: N checks passed" and exits 0, or raises.
"""

import json
import os
import pathlib

import anthropic

# The weather tool's schema, shared with test_openai_tools.py.
SCHEMA = json.loads((pathlib.Path(__file__).parent / "weather_schema.json").read_text())
WEATHER = {"name": "weather", "description": "The weather in a city on a day", "input_schema": SCHEMA}


def valid(args: dict) -> None:
    assert isinstance(args["city"], str) and len(args["city"]) <= 24, args
    assert args["units"] in ("celsius", "fahrenheit"), args
    assert isinstance(args["when"]["day"], int) and 1 <= args["when"]["day"] <= 31, args
    assert isinstance(args["when"]["morning"], bool), args


# Greedy decoding, so the whole and the streamed call agree (this client version has no
# `temperature` parameter; the server reads the field).
GREEDY = {"extra_body": {"temperature": 0}}


def main() -> None:
    client = anthropic.Anthropic(base_url=os.environ["K3_BASE_URL"], api_key=os.environ["K3_KEY"], max_retries=0, timeout=120)
    model = os.environ["K3_MODEL"]
    checks = 0
    messages = [{"role": "user", "content": "What is the weather in Bath?"}]
    ask = dict(model=model, max_tokens=400, tools=[WEATHER], messages=messages,
               tool_choice={"type": "any", "disable_parallel_tool_use": True}, **GREEDY)

    first = client.messages.create(**ask)
    assert first.stop_reason == "tool_use", first
    [use] = [b for b in first.content if b.type == "tool_use"]
    assert use.name == "weather", use
    valid(use.input)
    checks += 1

    with client.messages.stream(**ask) as stream:
        streamed = stream.get_final_message()
    [again] = [b for b in streamed.content if b.type == "tool_use"]
    assert streamed.stop_reason == "tool_use" and again.name == "weather" and again.input == use.input, (streamed, use)
    checks += 1

    follow = messages + [
        {"role": "assistant", "content": [b.model_dump() for b in first.content]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": use.id, "content": "Rain, 12 degrees."}]},
    ]
    answer = client.messages.create(model=model, max_tokens=24, tools=[WEATHER], messages=follow,
                                    tool_choice={"type": "none"}, **GREEDY)
    assert answer.stop_reason in ("end_turn", "max_tokens"), answer
    assert all(b.type == "text" for b in answer.content), answer.content
    checks += 1

    more = follow + [{"role": "assistant", "content": answer.content[0].text}, {"role": "user", "content": "And tomorrow?"}]
    counted = client.messages.count_tokens(model=model, tools=[WEATHER], messages=more)
    later = client.messages.create(model=model, max_tokens=8, tools=[WEATHER], messages=more, **GREEDY)
    assert later.usage.cache_read_input_tokens > 0, later.usage
    checks += 1
    # count_tokens counts the prompt exactly as the reply fed it (reused and new).
    assert counted.input_tokens == later.usage.input_tokens + later.usage.cache_read_input_tokens, (counted, later.usage)
    checks += 1

    try:
        client.messages.create(model=model, max_tokens=8, messages=messages, tools=[WEATHER, WEATHER])
        raise AssertionError("a tool declared twice was accepted")
    except anthropic.BadRequestError as e:
        assert e.body["type"] == "error" and e.body["error"]["type"] == "invalid_request_error", e.body
        assert "declared twice" in e.body["error"]["message"], e.body
    checks += 1

    print(f"anthropic client: {checks} checks passed")


if __name__ == "__main__":
    main()
