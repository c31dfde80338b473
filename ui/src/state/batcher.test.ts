// The event batcher: one flush per frame, order kept, a timer backs up a paused frame clock.
import { describe, expect, it } from "vitest";
import { createBatcher, type Scheduler } from "./batcher";

function manualScheduler() {
  const frames: (() => void)[] = [];
  const timers: (() => void)[] = [];
  let t = 0;
  const s: Scheduler = { frame: (cb) => void frames.push(cb), timer: (cb) => void timers.push(cb), now: () => ++t };
  return { s, frames, timers };
}

describe("createBatcher", () => {
  it("delivers all events of a frame in one batch, in order", () => {
    const { s, frames } = manualScheduler();
    const batches: number[][] = [];
    const push = createBatcher<number>((e) => batches.push(e), s);
    for (let i = 0; i < 1000; i++) push(i);
    expect(frames).toHaveLength(1);
    expect(batches).toHaveLength(0);
    frames.shift()!();
    expect(batches).toHaveLength(1);
    expect(batches[0]).toEqual(Array.from({ length: 1000 }, (_, i) => i));
  });

  it("flushes from the timer when no frame comes (hidden window), once", () => {
    const { s, frames, timers } = manualScheduler();
    const batches: string[][] = [];
    const push = createBatcher<string>((e) => batches.push(e), s);
    push("a");
    push("b");
    timers.shift()!();
    frames.shift()!();
    expect(batches).toEqual([["a", "b"]]);
    push("c");
    frames.pop()!();
    expect(batches).toEqual([["a", "b"], ["c"]]);
  });
});
