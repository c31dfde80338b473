"""The official `openai` Python client against `k3 serve` (RELIABILITY AP-18).

Run by cli/tests/integration/serve.rs with K3_BASE_URL (http://127.0.0.1:PORT/v1) and K3_MODEL set;
prints "openai client: 4 checks passed" and exits 0, or raises.
"""

import os

from openai import OpenAI


def main() -> None:
    client = OpenAI(base_url=os.environ["K3_BASE_URL"], api_key="dummy-key", max_retries=0, timeout=60)
    model = os.environ["K3_MODEL"]

    ids = [m.id for m in client.models.list().data]
    assert model in ids, ids

    messages = [{"role": "user", "content": "Hello there"}]
    whole = client.chat.completions.create(model=model, messages=messages, temperature=0, max_tokens=12)
    choice = whole.choices[0]
    assert choice.finish_reason in ("stop", "length"), choice.finish_reason
    assert isinstance(choice.message.content, str)
    assert whole.usage.completion_tokens >= 1 and whole.usage.prompt_tokens >= 1

    stream = client.chat.completions.create(
        model=model, messages=messages, temperature=0, max_tokens=12, stream=True
    )
    parts, finish = [], None
    for chunk in stream:
        if chunk.choices:
            delta = chunk.choices[0].delta
            if delta.content:
                parts.append(delta.content)
            finish = chunk.choices[0].finish_reason or finish
    assert "".join(parts) == choice.message.content, ("".join(parts), choice.message.content)
    assert finish == choice.finish_reason

    text = client.completions.create(model=model, prompt="Once upon a time", max_tokens=4, temperature=0)
    assert text.choices[0].finish_reason in ("stop", "length")
    assert text.usage.completion_tokens == 4

    print("openai client: 4 checks passed")


if __name__ == "__main__":
    main()
