// The browser mock's test hook (globalThis.__k3Mock), which ui/tests/browser.mjs drives: a scripted
// reply comes back as exactly its text, and open_link records the URL it was asked to open.
import { afterEach, describe, expect, it } from "vitest";
import type { Conversation, GenerationEvent } from "../generated/ipc";
import { createMockTransport, type MockHook } from "./browserMock";

const g = globalThis as { __k3Mock?: MockHook };

function finished(events: GenerationEvent[]): Promise<Extract<GenerationEvent, { type: "finished" }>> {
  return new Promise((resolve) => {
    const poll = () => {
      const f = events.find((e) => e.type === "finished");
      if (f && f.type === "finished") resolve(f);
      else setTimeout(poll, 5);
    };
    poll();
  });
}

afterEach(() => {
  delete g.__k3Mock;
});

describe("browser mock test hook", () => {
  it("replies with the scripted text exactly, streamed in pieces that add up to it", async () => {
    const reply = "<script>x</script>\n\n" + "é🙂".repeat(300) + "\n```js\n1\n```";
    g.__k3Mock = { replies: [reply], opened: [] };
    const t = createMockTransport();
    const conv = await t.call<Conversation>("create_conversation", {});
    const events: GenerationEvent[] = [];
    await t.generate("send_message", { conversationId: conv.id, text: "hi" }, (e) => events.push(e));
    const done = await finished(events);
    expect(done.reason).toBe("stop");
    expect(done.message.content).toBe(reply);
    const tokens = events.flatMap((e) => (e.type === "token" ? [e.text] : []));
    expect(tokens.length).toBeGreaterThan(1);
    expect(tokens.join("")).toBe(reply);
    expect(g.__k3Mock.replies).toEqual([]);
  });

  it("falls back to the demo words when no reply is queued, and records opened links", async () => {
    g.__k3Mock = { replies: [], opened: [] };
    const t = createMockTransport();
    const conv = await t.call<Conversation>("create_conversation", {});
    await t.call("update_conversation", {
      id: conv.id, title: conv.title, systemPrompt: "", settings: { ...conv.settings, maxTokens: 5 },
    });
    const events: GenerationEvent[] = [];
    await t.generate("send_message", { conversationId: conv.id, text: "hi" }, (e) => events.push(e));
    const done = await finished(events);
    expect(done.reason).toBe("length");
    expect(done.message.content.trim().split(/\s+/)).toHaveLength(5);
    await t.call("open_link", { url: "https://example.com/a" });
    expect(g.__k3Mock.opened).toEqual(["https://example.com/a"]);
  });
});
