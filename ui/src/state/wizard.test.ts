// The wizard screens' words and choices (state/wizard.ts), from settings, measurements and job views.
import { describe, expect, it } from "vitest";
import type { PresetRow, SetupSettings, SpeedSummary } from "../generated/ipc";
import { emptyJob } from "./setup";
import {
  awakeText, badFilesHeadline, bar, cancelNote, cellTitle, chosenPreset, downloadAgainLabel, downloadLine, firstLoadBar, firstLoadLayers,
  firstLoadMemory, jobHeading, jobStep, legendText, nvmeShare, offersResume, ofTotal, packLine, presetCells, presetToSave, presetWarning,
  resumeLabel, resumingText, shortHash, sortedCells, speedProgressText, speedRows, speedRunLabel, startsOnOpen,
} from "./wizard";

const settings: SetupSettings = {
  step: "download", repo: "moonshotai/Kimi-K3", storeDir: "/models/k3", trunkDir: null, preset: null, speed: null,
  overrides: [], dismissed: false, adopted: false,
};
const row = (over: Partial<PresetRow>): PresetRow => ({
  name: "auto", fits: true, problem: null, pinnedLayers: 4, layers: 61, ringSlots: 2, expertSlots: 64, peakBytes: 7.2e9,
  headroomBytes: 0.8e9, secondsLow: 5.25, secondsHigh: 7.5, secondsExpected: 6, defaultContext: 32768, kvBytesPerPosition: 70_000, ...over,
});

describe("the wizard's screens", () => {
  it("draws bars in whole percent with an exact width, an unknown total empty", () => {
    expect(bar(1, 3)).toEqual({ now: 33, width: `${(1 / 3) * 100}%` });
    expect(bar(0.5, 1)).toEqual({ now: 50, width: "50%" });
    expect(bar(5, 0)).toEqual({ now: 0, width: "0%" });
    expect(ofTotal(812_400_000_000, 1_560_900_000_000)).toBe("812.4 GB of 1.56 TB");
  });

  it("says what the speed test measured", () => {
    expect(speedProgressText({ depth: 0, mbPerS: 0, fraction: 0.1 })).toMatch(/^Finding the request size/);
    expect(speedProgressText({ depth: 16, mbPerS: 2345.6, fraction: 0.5 })).toBe("16 in flight: 2346 MB/s");
    expect(nvmeShare(1600)).toBe("50% of a 3.2 GB/s NVMe, 35% of 4.6 GB/s");
    const s: SpeedSummary = { qd1MbPerS: 800, qd16MbPerS: 3200, qd1ExpertsPerS: 45.59, qd16ExpertsPerS: 182.4, direct: true, readPattern: null };
    expect(speedRows(s).map((r) => r.depth)).toEqual(["1", "16"]);
    expect(speedRows(s)[0]).toEqual({ depth: "1", label: "1 at a time", cells: ["800 MB/s", "45.6 experts/s", "25% of a 3.2 GB/s NVMe, 17% of 4.6 GB/s"] });
    const best = speedRows({ ...s, readPattern: { requestBytes: 2 * 1048576, depth: 32, mbPerS: 3400.4 } })[2];
    expect(best).toEqual({ depth: "best", label: "Best pattern", cells: ["3400 MB/s", "2 MiB × 32 in flight", "the engine reads this way"] });
    expect(speedRunLabel(null)).toBe("Run the speed test");
    expect(speedRunLabel(s)).toBe("Test again");
  });

  it("shows auto until a preset is saved, and saves the shown one on Next", () => {
    expect(chosenPreset(settings)).toBe("auto");
    expect(presetToSave(settings)).toBe("auto");
    expect(chosenPreset({ ...settings, preset: "lean" })).toBe("lean");
    expect(presetToSave({ ...settings, preset: "lean" })).toBeNull();
  });

  it("fills a preset row, with dashes where the planner has nothing and the problem for headroom", () => {
    expect(presetCells(row({}))).toEqual({
      layers: "4/61", peak: "7.2 GB", headroom: "800.0 MB", context: "32,768 positions", contextTitle: "KV cache 2.3 GB at this context", seconds: "5.3–7.5",
    });
    const none = presetCells(row({ peakBytes: 0, problem: "needs 9 GB", defaultContext: null, secondsHigh: 0 }));
    expect(none).toMatchObject({ peak: "—", headroom: "needs 9 GB", context: "—", contextTitle: undefined, seconds: "—" });
    expect(presetWarning(null, "auto")).toBeNull();
    expect(presetWarning([row({})], "auto")).toBeNull();
    expect(presetWarning([row({ name: "max", fits: false })], "max")).toBe("max does not fit this machine's free memory: it will swap or be refused.");
  });

  it("heads the job screen with the job's own step, else the saved one", () => {
    expect(jobStep(emptyJob, settings)).toBe("download");
    expect(jobStep({ ...emptyJob, step: "pack" }, settings)).toBe("pack");
    expect(["download", "pack", "firstLoad", "ready"].map((s) => jobHeading(s as SetupSettings["step"]))).toEqual([
      "Downloading and verifying", "Packing the trunk", "First load", "Ready",
    ]);
  });

  it("starts the job on open and offers Resume unless done or a problem has its screen", () => {
    expect(startsOnOpen(settings)).toBe(true);
    expect(startsOnOpen({ ...settings, step: "ready" })).toBe(false);
    expect(offersResume(settings, emptyJob)).toBe(true);
    expect(offersResume({ ...settings, step: "ready" }, emptyJob)).toBe(false);
    expect(offersResume(settings, { ...emptyJob, problem: { kind: "badFiles", files: [] } })).toBe(false);
    expect(resumeLabel(emptyJob)).toBe("Resume");
    expect(resumeLabel({ ...emptyJob, phase: "failed" })).toBe("Try again");
  });

  it("describes the download: kept bytes, the bar's line, the legend and the cells", () => {
    expect(resumingText(emptyJob)).toBeNull();
    expect(resumingText({ ...emptyJob, keptBytes: 0 })).toBeNull();
    const job = { ...emptyJob, keptBytes: 4e11, totalBytes: 1.5609e12, doneBytes: 8.124e11, speed: 123_456_789, eta: 125 };
    expect(resumingText(job)).toBe("Resuming: 400.0 GB of 1.56 TB kept.");
    expect(downloadLine(job)).toBe("812.4 GB of 1.56 TB · 123.5 MB/s · ETA 2 min 5 s");
    const files = { b: { path: "b", state: "verified", detail: null }, a: { path: "a", state: "downloading", detail: "retry 2" }, c: { path: "c", state: "verified", detail: null } };
    expect(legendText(files)).toBe("2 verified · 1 downloading");
    expect(sortedCells(files).map((c) => c.path)).toEqual(["a", "b", "c"]);
    expect(cellTitle(files.a)).toBe("a: downloading — retry 2");
    expect(cellTitle(files.b)).toBe("b: verified");
  });

  it("says how packing goes and whether the machine is kept awake", () => {
    expect(packLine({ layer: 3, layers: 13, mbPerS: 899.6, etaSeconds: 8 })).toBe("Layer 3/13 · 900 MB/s · ETA 8 s");
    expect(packLine({ layer: 0, layers: 13, mbPerS: 0, etaSeconds: null })).toBe("Layer 0/13 · 0 MB/s · ETA —");
    expect(awakeText({ held: true, detail: null })).toBe("This computer is kept awake until this finishes.");
    expect(awakeText({ held: false, detail: "no session bus" })).toMatch(/^This computer may go to sleep meanwhile/);
  });

  it("says what Cancel kept and where", () => {
    const job = { ...emptyJob, doneBytes: 812_400_000_000, totalBytes: 1_560_900_000_000 };
    expect(cancelNote(job, "/models/k3")).toBe("Download cancelled. 812.4 GB of 1.56 TB kept in /models/k3; starting again resumes from there.");
    expect(cancelNote(emptyJob, null)).toBe("Download cancelled. Everything downloaded so far kept in the store; starting again resumes from there.");
  });

  it("shows the first load's pinned layers once it reports them, and its memory", () => {
    expect(firstLoadBar(null)).toBeNull();
    const p = { layersDone: 4, layersTotal: 16, rssBytes: 2e9, seconds: 75 };
    expect(firstLoadBar({ ...p, layersTotal: 0 })).toBeNull();
    expect(firstLoadBar(p)).toEqual({ now: 25, width: "25%" });
    expect(firstLoadLayers(p)).toBe("Trunk layer 4/16 in memory");
    expect(firstLoadMemory(p)).toBe("Memory in use: 2.0 GB · 1 min 15 s");
    expect(firstLoadMemory({ ...p, rssBytes: null })).toBe("Memory in use: — · 1 min 15 s");
  });

  it("words a hash failure by its count", () => {
    expect(badFilesHeadline(1)).toBe("1 file failed the integrity check twice");
    expect(badFilesHeadline(3)).toBe("3 files failed the integrity check twice");
    expect(downloadAgainLabel(1)).toBe("Download it again");
    expect(downloadAgainLabel(3)).toBe("Download them again");
    expect(shortHash("0123456789abcdef0123")).toBe("0123456789abcdef…");
  });
});
