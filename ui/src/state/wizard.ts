// The setup wizard's screens, the pure half: the words each screen shows, computed from what the Rust
// side measured and what the job view (setup.ts) folded, and which choice a button makes.
// Tested in wizard.test.ts; components/wizard/ only draws and forwards.
import type { FileCell, PresetRow, SetupSettings, SetupStep, SpeedSummary } from "../generated/ipc";
import { type JobView, countStates, duration, gb } from "./setup";

/** A progress bar: its aria-valuenow (whole percent) and its fill's CSS width. */
export interface Bar {
  now: number;
  width: string;
}

/** `done` of `total` as a bar; an unknown total (0) is an empty bar. */
export function bar(done: number, total: number): Bar {
  const percent = total ? (done / total) * 100 : 0;
  return { now: Math.round(percent), width: `${percent}%` };
}

/** "812.4 GB of 1.56 TB". */
export function ofTotal(bytes: number, totalBytes: number): string {
  return `${gb(bytes)} of ${gb(totalBytes)}`;
}

// Speed test.

/** The running speed test's line: the pattern sweep first (depth 0), then each queue depth's rate. */
export function speedProgressText(p: NonNullable<JobView["speedTest"]>): string {
  return p.depth === 0 ? "Finding the request size and depth this drive reads fastest…" : `${p.depth} in flight: ${p.mbPerS.toFixed(0)} MB/s`;
}

/** A measured rate against the two reference NVMe drives. */
export function nvmeShare(mbPerS: number): string {
  return `${Math.round((mbPerS / 3200) * 100)}% of a 3.2 GB/s NVMe, ${Math.round((mbPerS / 4600) * 100)}% of 4.6 GB/s`;
}

export interface SpeedRow {
  /** The row's data-depth. */
  depth: "1" | "16" | "best";
  label: string;
  cells: [string, string, string];
}

/** The speed table: one at a time, 16 at a time, and the best read pattern when the sweep found one. */
export function speedRows(s: SpeedSummary): SpeedRow[] {
  const rows: SpeedRow[] = [
    { depth: "1", label: "1 at a time", cells: [`${s.qd1MbPerS.toFixed(0)} MB/s`, `${s.qd1ExpertsPerS.toFixed(1)} experts/s`, nvmeShare(s.qd1MbPerS)] },
    { depth: "16", label: "16 at a time", cells: [`${s.qd16MbPerS.toFixed(0)} MB/s`, `${s.qd16ExpertsPerS.toFixed(1)} experts/s`, nvmeShare(s.qd16MbPerS)] },
  ];
  const p = s.readPattern;
  if (p) {
    rows.push({
      depth: "best",
      label: "Best pattern",
      cells: [`${p.mbPerS.toFixed(0)} MB/s`, `${p.requestBytes / 1048576} MiB × ${p.depth} in flight`, "the engine reads this way"],
    });
  }
  return rows;
}

export function speedRunLabel(s: SpeedSummary | null): string {
  return s ? "Test again" : "Run the speed test";
}

// Presets.

/** The preset shown as chosen: the saved one, else auto. */
export function chosenPreset(settings: SetupSettings): string {
  return settings.preset ?? "auto";
}

/** What Next on the preset screen saves before moving on: the shown default when none was saved yet, else nothing (null). */
export function presetToSave(settings: SetupSettings): string | null {
  return settings.preset ? null : chosenPreset(settings);
}

export interface PresetCells {
  layers: string;
  peak: string;
  headroom: string;
  context: string;
  contextTitle: string | undefined;
  seconds: string;
}

/** One preset row's figures; "—" where the planner has none, the problem in place of the headroom. */
export function presetCells(r: PresetRow): PresetCells {
  return {
    layers: `${r.pinnedLayers}/${r.layers}`,
    peak: r.peakBytes ? gb(r.peakBytes) : "—",
    headroom: r.problem ?? gb(r.headroomBytes),
    context: r.defaultContext ? `${r.defaultContext.toLocaleString("en-US")} positions` : "—",
    contextTitle: r.defaultContext ? `KV cache ${gb(r.defaultContext * r.kvBytesPerPosition)} at this context` : undefined,
    seconds: r.secondsHigh ? `${r.secondsLow.toFixed(1)}–${r.secondsHigh.toFixed(1)}` : "—",
  };
}

/** The warning under the table when the chosen preset does not fit, or null. */
export function presetWarning(rows: PresetRow[] | null, chosen: string): string | null {
  const row = rows?.find((r) => r.name === chosen);
  return row && !row.fits ? `${chosen} does not fit this machine's free memory: it will swap or be refused.` : null;
}

// The job screens (download, pack, first load, ready).

/** The step the job screen shows: the one the job reported, else the saved one. */
export function jobStep(job: JobView, settings: SetupSettings): SetupStep {
  return job.step ?? settings.step;
}

export function jobHeading(step: SetupStep): string {
  return step === "download" ? "Downloading and verifying" : step === "pack" ? "Packing the trunk" : step === "firstLoad" ? "First load" : "Ready";
}

/** The job starts by itself when its screen opens, unless setup is already done. */
export function startsOnOpen(settings: SetupSettings): boolean {
  return settings.step !== "ready";
}

/** Whether a stopped job offers Resume / Try again (not when done, nor while a problem has its own screen). */
export function offersResume(settings: SetupSettings, job: JobView): boolean {
  return settings.step !== "ready" && !job.problem;
}

export function resumeLabel(job: JobView): string {
  return job.phase === "failed" ? "Try again" : "Resume";
}

/** "Resuming: … kept." when a run began with bytes from an earlier one, else null. */
export function resumingText(job: JobView): string | null {
  return job.keptBytes !== null && job.keptBytes > 0 ? `Resuming: ${ofTotal(job.keptBytes, job.totalBytes)} kept.` : null;
}

export function downloadLine(job: JobView): string {
  return `${ofTotal(job.doneBytes, job.totalBytes)} · ${(job.speed / 1e6).toFixed(1)} MB/s · ETA ${duration(job.eta)}`;
}

/** The grid's legend: "90 verified · 6 downloading". */
export function legendText(files: JobView["files"]): string {
  return Object.entries(countStates(files))
    .map(([s, n]) => `${n} ${s}`)
    .join(" · ");
}

/** The grid's cells in path order. */
export function sortedCells(files: JobView["files"]): FileCell[] {
  return Object.values(files).sort((a, b) => a.path.localeCompare(b.path));
}

export function cellTitle(c: FileCell): string {
  return `${c.path}: ${c.state}${c.detail ? ` — ${c.detail}` : ""}`;
}

export function packLine(pack: NonNullable<JobView["pack"]>): string {
  return `Layer ${pack.layer}/${pack.layers} · ${pack.mbPerS.toFixed(0)} MB/s · ETA ${duration(pack.etaSeconds)}`;
}

export function awakeText(awake: NonNullable<JobView["awake"]>): string {
  return awake.held
    ? "This computer is kept awake until this finishes."
    : "This computer may go to sleep meanwhile: the system would not keep it awake. Keep it awake yourself if you can; the download resumes either way.";
}

/** The note shown on the drive screen after Cancel: what was kept and where. */
export function cancelNote(job: JobView, storeDir: string | null): string {
  const kept = job.doneBytes > 0 ? ofTotal(job.doneBytes, job.totalBytes) : "Everything downloaded so far";
  return `Download cancelled. ${kept} kept in ${storeDir ?? "the store"}; starting again resumes from there.`;
}

// The first load.

/** The trunk-pinning bar, or null before the load reports layers. */
export function firstLoadBar(progress: JobView["firstLoad"]): Bar | null {
  return progress !== null && progress.layersTotal > 0 ? bar(progress.layersDone, progress.layersTotal) : null;
}

export function firstLoadLayers(progress: NonNullable<JobView["firstLoad"]>): string {
  return `Trunk layer ${progress.layersDone}/${progress.layersTotal} in memory`;
}

export function firstLoadMemory(progress: NonNullable<JobView["firstLoad"]>): string {
  return `${progress.rssBytes !== null ? `Memory in use: ${gb(progress.rssBytes)}` : "Memory in use: —"} · ${duration(progress.seconds)}`;
}

// Hash failures.

export function badFilesHeadline(count: number): string {
  return `${count === 1 ? "1 file" : `${count} files`} failed the integrity check twice`;
}

export function downloadAgainLabel(count: number): string {
  return `Download ${count === 1 ? "it" : "them"} again`;
}

/** A SHA-256 shortened for the screen: its first 16 hex digits and an ellipsis. */
export function shortHash(hex: string): string {
  return `${hex.slice(0, 16)}…`;
}
