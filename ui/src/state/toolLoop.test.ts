// When the tool loop replies to results by itself, and when it waits for the user.
import { describe, expect, it } from "vitest";
import type { Message } from "../generated/ipc";
import { message } from "../test/fixtures";
import type { PendingToolCall } from "../generated/ipc";
import { MAX_LOOP_STEPS, nextStep, stillWaiting } from "./toolLoop";

const call = { id: "c1", tool: "read", index: 1, arguments: "{}" };
const user = message({ id: 1, role: "user", content: "read it" });
const asked = (id: number) => message({ id, role: "assistant", content: "", toolCalls: [call] });
const result = (id: number, status: Message["status"] = "complete") =>
  message({ id, role: "tool", content: "text", status, toolAnswer: { callId: "c1", tool: "read", index: 1, server: "Files", cutFromBytes: null } });

describe("nextStep", () => {
  it("replies to the results once every call has one, a denied (failed) one included", () => {
    expect(nextStep([user, asked(2), result(3)])).toEqual({ kind: "continue" });
    expect(nextStep([user, asked(2), result(3, "failed")])).toEqual({ kind: "continue" });
  });

  it("waits when nothing is to answer, a result was stopped, or the loop ran its steps", () => {
    expect(nextStep([])).toEqual({ kind: "wait", note: null });
    expect(nextStep([user])).toEqual({ kind: "wait", note: null });
    expect(nextStep([user, asked(2)])).toEqual({ kind: "wait", note: null });
    const stopped = nextStep([user, asked(2), result(3, "stopped")]);
    expect(stopped.kind === "wait" && stopped.note).toContain("stopped");
    const long: Message[] = [user];
    for (let i = 0; i < MAX_LOOP_STEPS; i++) long.push(asked(10 + 2 * i), result(11 + 2 * i));
    const tired = nextStep(long);
    expect(tired.kind === "wait" && tired.note).toContain(`${MAX_LOOP_STEPS} tool-calling replies`);
    expect(nextStep([...long.slice(2), user, asked(99), result(100)])).toEqual({ kind: "continue" });
  });
});

describe("stillWaiting", () => {
  const waiting = (messageId: number): PendingToolCall => ({
    messageId, callId: "c2", tool: "read", arguments: "{}", serverId: "files", serverName: "Files", alwaysAllowed: false,
  });

  it("keeps the calls of the last assistant message while only its results follow it", () => {
    expect(stillWaiting([user, asked(2)], [waiting(2)])).toBe(true);
    expect(stillWaiting([user, asked(2), result(3), result(4, "failed")], [waiting(2)])).toBe(true);
  });

  it("drops them once anything else follows, the message is gone, or there are none", () => {
    expect(stillWaiting([user, asked(2), result(3), message({ id: 5, role: "user", content: "next" })], [waiting(2)])).toBe(false);
    expect(stillWaiting([user, asked(2), result(3), asked(6)], [waiting(2)])).toBe(false);
    expect(stillWaiting([user, asked(7)], [waiting(2)])).toBe(false);
    expect(stillWaiting([user, asked(2)], [])).toBe(false);
  });
});
