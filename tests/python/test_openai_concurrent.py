"""Concurrent clients against `k3 serve --batch N` (issue 40): continuous batching.

Run by cli/tests/integration/serve.rs with K3_BASE_URL (http://127.0.0.1:PORT/v1), K3_MODEL and
K3_BATCH set. Each of eight conversations is asked alone first, then all at once from eight
threads with the official `openai` client (greedy and seeded sampling, whole and streamed): each
reply must equal the one it got alone, token for token. A client that leaves mid-stream does not
change the others' replies, and /health shows the batch (a step carried two or more). Prints
"openai concurrent: 8 replies equal alone, 1 cancelled, batch N" and exits 0, or raises.
"""

import json
import os
import threading
import urllib.request

from openai import OpenAI

N = 8


def ask(client, model, i, stream):
    """Conversation `i`'s reply: its text and its token ids (k3's `token_ids` extension)."""
    messages = [{"role": "user", "content": f"Tell me about the number {i * 7 + 3}, friend {i}."}]
    sampling = {"temperature": 0} if i % 2 == 0 else {"temperature": 0.8, "top_p": 0.9, "seed": 40 + i}
    if not stream:
        r = client.chat.completions.create(model=model, messages=messages, max_tokens=10 + i, **sampling)
        return r.choices[0].message.content, (r.model_extra or {}).get("token_ids")
    parts = []
    for chunk in client.chat.completions.create(
        model=model, messages=messages, max_tokens=10 + i, stream=True, **sampling
    ):
        if chunk.choices and chunk.choices[0].delta.content:
            parts.append(chunk.choices[0].delta.content)
    return "".join(parts), None


def health(base):
    root = base.rsplit("/v1", 1)[0]
    with urllib.request.urlopen(root + "/health", timeout=30) as r:
        return json.loads(r.read())


def main() -> None:
    base, model, batch = os.environ["K3_BASE_URL"], os.environ["K3_MODEL"], int(os.environ["K3_BATCH"])
    client = OpenAI(base_url=base, api_key="dummy-key", max_retries=0, timeout=120)
    assert health(base)["batch"]["limit"] == batch, health(base)

    alone = [ask(client, model, i, stream=False) for i in range(N)]
    assert all(a[1] for a in alone), "token_ids in every reply"

    got = [None] * N
    errors = []
    left = threading.Event()

    def worker(i):
        try:
            got[i] = ask(client, model, i, stream=(i % 3 == 1))
        except Exception as e:  # reported below with the conversation's number
            errors.append((i, repr(e)))

    def leaver():
        # Streams a long reply and leaves after its first piece of text.
        try:
            stream = client.chat.completions.create(
                model=model, messages=[{"role": "user", "content": "Go on and on."}], max_tokens=200, stream=True
            )
            for chunk in stream:
                if chunk.choices and chunk.choices[0].delta.content:
                    stream.close()
                    break
        finally:
            left.set()

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(N)] + [threading.Thread(target=leaver)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    assert left.is_set()
    for i in range(N):
        text, ids = got[i]
        assert text == alone[i][0], (i, text, alone[i][0])
        if ids is not None:
            assert ids == alone[i][1], (i, ids, alone[i][1])

    stats = health(base)
    assert stats["batch"]["running"] == 0, stats
    assert stats["batch"]["widest_step"] >= 2, ("no step carried two conversations", stats)
    print(f"openai concurrent: {N} replies equal alone, 1 cancelled, batch {batch}")


if __name__ == "__main__":
    main()
