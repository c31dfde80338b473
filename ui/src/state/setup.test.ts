import { describe, expect, it } from "vitest";
import { countStates, duration, emptyJob, foldSetup, gb } from "./setup";

describe("the setup job view", () => {
  it("folds a download from pinned to ready", () => {
    let v = foldSetup(emptyJob, { type: "pinned", commit: "a".repeat(40), files: 2, totalBytes: 1000, keptBytes: 400 });
    expect(v.keptBytes).toBe(400);
    expect(v.doneBytes).toBe(400);
    v = foldSetup(v, {
      type: "progress", doneBytes: 700, totalBytes: 1000, speedBytesPerS: 50, etaSeconds: 6,
      files: [{ path: "a", state: "downloading", detail: null }, { path: "b", state: "verified", detail: null }],
    });
    v = foldSetup(v, { type: "progress", doneBytes: 0, totalBytes: 0, speedBytesPerS: 0, etaSeconds: null, files: [{ path: "a", state: "verified", detail: null }] });
    expect(v.doneBytes).toBe(700); // a cells-only batch keeps the totals
    expect(countStates(v.files)).toEqual({ verified: 2 });
    v = foldSetup(v, { type: "step", step: "pack" });
    v = foldSetup(v, { type: "pack", layer: 3, layers: 13, bytesDone: 1.8e9, bytesTotal: 9e9, mbPerS: 900 });
    expect(v.pack).toEqual({ layer: 3, layers: 13, mbPerS: 900, etaSeconds: 8 });
    const model = { path: "/s", name: "s", isDemo: false, layers: 13, hiddenSize: 128, vocabSize: 768, routedExperts: 8, expertsPerToken: 2, checkpointBytes: 1, memory: "m", loadMs: 1 };
    v = foldSetup(v, { type: "firstLoad", layersDone: 4, layersTotal: 13, rssBytes: 2e9, seconds: 1.5 });
    expect(v.firstLoad).toEqual({ layersDone: 4, layersTotal: 13, rssBytes: 2e9, seconds: 1.5 });
    v = foldSetup(v, { type: "ready", model });
    expect(v.phase).toBe("ready");
    expect(v.events).toBe(7);
  });

  it("keeps the last retry, clears a pause once bytes flow, and keeps the last notices", () => {
    let v = foldSetup(emptyJob, { type: "retry", path: "x", reason: "HTTP 503", attempt: 2, waitSeconds: 3.2 });
    expect(v.retry).toBe("x: HTTP 503 — retrying in 4 s (attempt 2)");
    v = foldSetup(v, { type: "paused", reason: "the drive is full", freeBytes: 1e9, neededBytes: 2e9 });
    expect(v.paused).toBe("the drive is full (1.00 GB free, 2.00 GB needed)");
    v = foldSetup(v, { type: "progress", doneBytes: 1, totalBytes: 2, speedBytesPerS: 0, etaSeconds: null, files: [] });
    expect(v.paused).not.toBeNull(); // speed 0: still paused
    v = foldSetup(v, { type: "progress", doneBytes: 2, totalBytes: 3, speedBytesPerS: 9, etaSeconds: 1, files: [] });
    expect(v.paused).toBeNull();
    expect(v.retry).not.toBeNull();
    for (let i = 0; i < 10; i++) v = foldSetup(v, { type: "notice", path: "p", message: `m${i}` });
    expect(v.notices).toHaveLength(6);
    expect(v.notices[5]).toBe("p: m9");
    v = foldSetup(v, { type: "failed", error: { code: "DOWNLOAD", message: "no", details: null } });
    expect(v.phase).toBe("failed");
  });

  it("keeps a failure's own screen until the next run pins again", () => {
    const denied = { kind: "denied", url: "https://hub/x", status: 401, tokenPath: "/h/token", tokenFromEnv: false } as const;
    let v = foldSetup(emptyJob, { type: "problem", problem: denied });
    v = foldSetup(v, { type: "failed", error: { code: "DOWNLOAD", message: "access denied", details: null } });
    expect(v.problem).toEqual(denied);
    expect(v.phase).toBe("failed");
    v = foldSetup(v, { type: "pinned", commit: "b".repeat(40), files: 2, totalBytes: 10, keptBytes: 4 });
    expect(v.problem).toBeNull();
    expect(v.error).toBeNull();
    expect(v.phase).toBe("running");
  });

  it("remembers whether the machine is kept awake", () => {
    const v = foldSetup(emptyJob, { type: "awake", held: false, detail: "no session bus" });
    expect(v.awake).toEqual({ held: false, detail: "no session bus" });
  });

  it("formats sizes and times for people", () => {
    expect(gb(1_560_936_091_448)).toBe("1.56 TB");
    expect(gb(812_400_000_000)).toBe("812.4 GB");
    expect(duration(3725)).toBe("1 h 2 min");
    expect(duration(null)).toBe("—");
  });
});
