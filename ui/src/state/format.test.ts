// Units and wording: GB = 1e9 B, s/token with significant digits, phase strip text.
import { describe, expect, it } from "vitest";
import { formatBytesExact, formatDuration, formatGB, formatPercent, formatReadRate, formatSecondsPerToken } from "./format";
import { phaseText } from "./phase";

describe("format", () => {
  it("GB is 1e9 bytes", () => {
    expect(formatGB(1_560_936_091_448)).toBe("1,560.94 GB");
    expect(formatGB(17_547_264)).toBe("0.0175 GB");
    expect(formatGB(1e9)).toBe("1.00 GB");
    expect(formatGB(0)).toBe("0 GB");
    expect(formatBytesExact(17_547_264)).toBe("17,547,264 B");
  });

  it("s/token keeps small values readable and never shows tokens per second", () => {
    expect(formatSecondsPerToken(5.6)).toBe("5.6 s/token");
    expect(formatSecondsPerToken(33.25)).toBe("33.3 s/token");
    expect(formatSecondsPerToken(0.000981)).toBe("0.000981 s/token");
    expect(formatSecondsPerToken(null)).toBe("— s/token");
  });

  it("percent can exceed 100", () => {
    expect(formatPercent(0.523)).toBe("52%");
    expect(formatPercent(1.34)).toBe("134%");
  });

  it("durations", () => {
    expect(formatDuration(850)).toBe("850 ms");
    expect(formatDuration(12_300)).toBe("12.3 s");
    expect(formatDuration(192_000)).toBe("3 m 12 s");
    expect(formatDuration(3_900_000)).toBe("1 h 05 m");
  });
});

describe("phaseText", () => {
  it("names every phase", () => {
    expect(phaseText({ kind: "starting" })).toBe("Sending…");
    expect(phaseText({ kind: "queued", position: 0 })).toBe("Queued");
    expect(phaseText({ kind: "queued", position: 2 })).toBe("Queued (2 ahead)");
    expect(phaseText({ kind: "prefill", done: 100, total: 300, etaMs: 4000 })).toBe("Reading prompt 100/300 · about 4 s left");
    expect(phaseText({ kind: "writing", tokens: 10, maxTokens: 110, secondsPerToken: 5.6 })).toBe(
      "Writing token 10/110 · 5.6 s/token · at most 9 m 20 s left",
    );
    expect(phaseText({ kind: "done", reason: "stop" })).toBe("Done");
    expect(phaseText({ kind: "done", reason: "length" })).toBe("Done (reached max tokens)");
    expect(phaseText({ kind: "done", reason: "contextFull" })).toBe("Done (the conversation filled its context)");
    expect(phaseText({ kind: "stopped" })).toBe("Stopped");
    expect(phaseText({ kind: "failed", error: { code: "EXPERT_READ", message: "shard 37 at 1234", details: null } })).toBe(
      "Failed: output unsound. shard 37 at 1234",
    );
  });

  it("gives the read rate against the drive's best, and none for a reply that read almost nothing", () => {
    expect(formatReadRate(4.3e9, 2000, 2.8e9)).toBe("at 2.15 of 2.80 GB/s");
    expect(formatReadRate(4.3e9, 2000, null)).toBe("at 2.15 GB/s");
    expect(formatReadRate(5e8, 2000, 1.6e9)).toBe("at 0.25 of 1.60 GB/s");
    expect(formatReadRate(607_000, 217, 1.6e9)).toBeNull();
    expect(formatReadRate(5e9, 0, null)).toBeNull();
  });
});
