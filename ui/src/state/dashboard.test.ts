import { describe, expect, it } from "vitest";
import type { Dashboard, TokenPoint } from "../generated/ipc";
import { SERIES_POINTS, TIMELINE_TOKENS, advice, averages, emptySeries, fold, recentRate, recentWindow, upTo } from "./dashboard";

const token = (seq: number, over: Partial<TokenPoint> = {}): TokenPoint => ({
  seq, job: 1, index: seq - 1, prefill: seq === 1, wallMs: 1000, trunkWaitMs: 500, expertWaitMs: 200, computeMs: 300,
  trunkBytes: 4e9, expertBytes: 0.8e9, expertRequests: 100, trueHits: 10, prefetchHits: 5, misses: 85, ...over,
});

const reading = (at: number, read: number, tokens: TokenPoint[] = []): Dashboard => ({
  atSeconds: at, activity: { kind: "idle" }, rssBytes: 5e9, peakRssBytes: 6e9, planBytes: 8e9, breakdown: [],
  pinnedLayers: 0, layers: 4, system: { totalBytes: 24e9, availableBytes: 10e9, pressureAvg10: 0, pressure: "0.0% of the last 10 s stalled on memory (PSI some avg10)", pressureHigh: false },
  trunkBytesRead: read * 0.8, expertBytesRead: read * 0.2, readsInFlight: 3, tokens, lastSeq: tokens.at(-1)?.seq ?? 0,
  pressure: null,
});

describe("fold", () => {
  it("turns cumulative bytes into a rate between readings, and drops the rate when counters restart", () => {
    let s = fold(emptySeries(), reading(100, 0));
    s = fold(s, reading(100.5, 1e9));
    s = fold(s, reading(101, 0.5e9)); // another model opened: counters restarted
    expect(s.readRate).toEqual([null, 2e9, null]);
    expect(s.at).toEqual([100, 100.5, 101]);
  });

  it("keeps each token once and bounds every series", () => {
    let s = emptySeries();
    s = fold(s, reading(1, 0, [token(1), token(2)]));
    // The backend may send a token again when the page asked with an old `after`.
    s = fold(s, reading(2, 0, [token(2), token(3)]));
    expect(s.tokens.map((t) => t.seq)).toEqual([1, 2, 3]);
    for (let i = 0; i < SERIES_POINTS + 10; i++) s = fold(s, reading(3 + i, 0, [token(4 + i)]));
    expect(s.at.length).toBe(SERIES_POINTS);
    expect(s.tokens.length).toBe(TIMELINE_TOKENS);
    expect(s.tokens.at(-1)!.seq).toBe(SERIES_POINTS + 13);
  });
});

describe("recentRate", () => {
  it("averages the last four intervals and skips gaps", () => {
    expect(recentRate([null])).toBeNull();
    expect(recentRate([9e9, 1e9, null, 2e9, 3e9, 6e9])).toBe((2e9 + 3e9 + 6e9) / 3);
    expect(recentRate([8e9, 1e9, 1e9, 1e9, 1e9])).toBe(1e9);
  });
});

describe("recentWindow", () => {
  it("shows the last 30 s before now with no reading, and at least 30 s ending at the newest one", () => {
    const now = 1_800_000_000;
    expect(recentWindow(null, null, now)).toEqual([now - 30, now]);
    expect(recentWindow(Number.POSITIVE_INFINITY, Number.NEGATIVE_INFINITY, now)).toEqual([now - 30, now]);
    expect(recentWindow(now - 5, now - 5, now)).toEqual([now - 35, now - 5]);
    expect(recentWindow(now - 100, now - 2, now)).toEqual([now - 100, now - 2]);
  });
});

describe("upTo", () => {
  it("runs a tenth above the largest value and never below the floor, with or without readings", () => {
    expect(upTo(null, 1e9)).toEqual([0, 1e9]);
    expect(upTo(Number.NEGATIVE_INFINITY, 1e9)).toEqual([0, 1e9]);
    expect(upTo(0, 1e9)).toEqual([0, 1e9]);
    expect(upTo(5e9, 1e9)).toEqual([0, 5e9 * 1.1]);
  });
});

describe("averages", () => {
  it("leaves the prefill token out and computes the true hit rate over requests", () => {
    const a = averages([token(1, { wallMs: 9000 }), token(2), token(3, { trueHits: 30 })])!;
    expect(a.tokens).toBe(2);
    expect(a.wallMs).toBe(1000);
    expect(a.trueHitRate).toBe(40 / 200);
    expect(averages([token(1)])).toBeNull();
  });
});

describe("advice", () => {
  const facts = { driveBytesPerS: 1.5e9, spareBytes: 9e9, pinnedLayers: 0, layers: 4 };
  it("prices a faster drive and more pinned trunk from the measured waits", () => {
    const lines = advice(averages([token(1), token(2), token(3)]), facts);
    // 700 ms of waits at 1.5 GB/s; at 3 GB/s half of it remains.
    expect(lines[0]).toBe("A 3 GB/s drive would save ~0.35 s/token: tokens wait 0.70 s on reads from this 1.50 GB/s drive.");
    // 8 GB of spare memory (9 − 1 GB kept free) pins 4 GB — all the trunk read per token.
    expect(lines[1]).toBe("Pinning 4.0 GB more trunk saves ~0.50 s/token (4.00 GB of trunk is read per token; 9.0 GB is spare).");
    expect(lines[2]).toContain("expert cache hits 10%");
  });

  it("says when the drive is not read, and when compute dominates", () => {
    const resident = token(2, { trunkBytes: 0, expertBytes: 0, trunkWaitMs: 0, expertWaitMs: 0, computeMs: 1000 });
    expect(advice(averages([resident]), facts)).toEqual([
      "Nothing is read from the drive: every weight this model uses is in RAM, so each token is compute (1.0 s).",
    ]);
    const compute = token(2, { trunkWaitMs: 20, expertWaitMs: 10, computeMs: 970, trueHits: 90 });
    const lines = advice(averages([compute]), { ...facts, spareBytes: 0 });
    expect(lines).toEqual(["Compute is 97% of each token: a faster drive would not help."]);
    expect(advice(null, facts)).toEqual([]);
  });
});
