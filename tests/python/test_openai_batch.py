"""The OpenAI Batch API of `k3 serve` through the official `openai` client (issue 40).

Run by cli/tests/integration/serve.rs with K3_BASE_URL and K3_MODEL set, in one of three modes
(K3_BATCH_MODE):

* `whole`: uploads a JSONL of requests (greedy, seeded, one invalid), creates a batch, waits for
  it, and checks the output file against the same requests asked live, the invalid one in the
  error file, the listing and a cancel of a finished batch. Prints "openai batch: N results
  equal live, 1 error".
* `start`: uploads and creates a longer batch, waits until some requests are done (not all),
  prints "batch started: BATCH_ID" and exits (the test then kills the server with SIGKILL).
* `finish` (K3_BATCH_ID): waits for that batch after the restart and checks every request is
  in the output exactly once, each equal to the request asked live. Prints "openai batch:
  resumed, N results equal live, each once".
"""

import io
import json
import os
import time

from openai import OpenAI


def request_line(i, model, max_tokens):
    body = {"model": model, "messages": [{"role": "user", "content": f"Say something about {i} ships."}]}
    body["max_tokens"] = max_tokens
    if i % 2 == 0:
        body["temperature"] = 0
    else:
        body.update({"temperature": 0.9, "top_p": 0.95, "seed": 1000 + i})
    return {"custom_id": f"req-{i}", "method": "POST", "url": "/v1/chat/completions", "body": body}


def upload(client, lines):
    data = "".join(json.dumps(l) + "\n" for l in lines).encode()
    return client.files.create(file=("input.jsonl", io.BytesIO(data)), purpose="batch")


def wait(client, batch_id, until, timeout=300):
    deadline = time.time() + timeout
    while time.time() < deadline:
        b = client.batches.retrieve(batch_id)
        if until(b):
            return b
        time.sleep(0.2)
    raise AssertionError(f"batch {batch_id} did not get there: {client.batches.retrieve(batch_id)}")


def results(client, file_id):
    text = client.files.content(file_id).text
    return [json.loads(l) for l in text.splitlines() if l.strip()]


def check_against_live(client, lines, out):
    by_id = {}
    for r in out:
        assert r["custom_id"] not in by_id, ("a request answered twice", r["custom_id"])
        by_id[r["custom_id"]] = r
    for line in lines:
        got = by_id[line["custom_id"]]
        assert got["response"]["status_code"] == 200, got
        live = client.chat.completions.create(**line["body"])
        body = got["response"]["body"]
        assert body["choices"][0]["message"]["content"] == live.choices[0].message.content, (line, body, live)
        assert body.get("token_ids") == (live.model_extra or {}).get("token_ids"), line["custom_id"]
    return len(by_id)


def main() -> None:
    client = OpenAI(base_url=os.environ["K3_BASE_URL"], api_key="dummy-key", max_retries=0, timeout=120)
    model, mode = os.environ["K3_MODEL"], os.environ["K3_BATCH_MODE"]

    if mode == "whole":
        lines = [request_line(i, model, 8) for i in range(6)]
        bad = {"custom_id": "bad", "method": "POST", "url": "/v1/chat/completions",
               "body": {"model": model, "messages": [{"role": "user", "content": "x"}], "temperature": 9}}
        f = upload(client, lines + [bad])
        assert f.purpose == "batch" and f.bytes > 0, f
        batch = client.batches.create(input_file_id=f.id, endpoint="/v1/chat/completions", completion_window="24h")
        assert batch.status in ("validating", "in_progress"), batch
        done = wait(client, batch.id, lambda b: b.status == "completed")
        assert done.request_counts.total == 7 and done.request_counts.completed == 6, done.request_counts
        assert done.request_counts.failed == 1, done.request_counts
        n = check_against_live(client, lines, results(client, done.output_file_id))
        errors = results(client, done.error_file_id)
        assert [e["custom_id"] for e in errors] == ["bad"] and errors[0]["response"]["status_code"] == 400, errors
        assert batch.id in [b.id for b in client.batches.list().data]
        assert client.batches.cancel(batch.id).status == "completed", "a finished batch stays finished"
        try:
            client.batches.create(input_file_id="file-none", endpoint="/v1/chat/completions", completion_window="24h")
            raise AssertionError("a batch of a missing file was created")
        except Exception as e:  # the client's BadRequestError
            assert "file-none" in str(e), e
        print(f"openai batch: {n} results equal live, 1 error")
    elif mode == "start":
        lines = [request_line(i, model, 24) for i in range(12)]
        f = upload(client, lines)
        batch = client.batches.create(input_file_id=f.id, endpoint="/v1/chat/completions", completion_window="24h")
        wait(client, batch.id, lambda b: b.request_counts.completed >= 2)
        b = client.batches.retrieve(batch.id)
        assert b.request_counts.completed < 12, ("too fast to interrupt", b.request_counts)
        print(f"batch started: {batch.id}")
    else:
        batch_id = os.environ["K3_BATCH_ID"]
        lines = [request_line(i, model, 24) for i in range(12)]
        done = wait(client, batch_id, lambda b: b.status == "completed")
        assert done.request_counts.completed == 12 and done.request_counts.failed == 0, done.request_counts
        out = results(client, done.output_file_id)
        assert len(out) == 12, ("each request once", [r["custom_id"] for r in out])
        n = check_against_live(client, lines, out)
        print(f"openai batch: resumed, {n} results equal live, each once")


if __name__ == "__main__":
    main()
