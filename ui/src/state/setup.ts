// The setup wizard's job view: what the download, pack and first load have reported, folded from
// SetupEvents. Pure: tested in setup.test.ts; the Rust side batches events to <= 10 per second and
// each event is one render.
import type { FileCell, IpcError, ModelInfo, SetupEvent, SetupProblem, SetupStep, SpeedSummary } from "../generated/ipc";

export interface JobView {
  phase: "idle" | "running" | "paused" | "failed" | "ready";
  step: SetupStep | null;
  commit: string | null;
  totalBytes: number;
  doneBytes: number;
  keptBytes: number | null;
  speed: number;
  eta: number | null;
  files: Record<string, FileCell>;
  retry: string | null;
  paused: string | null;
  notices: string[];
  pack: { layer: number; layers: number; mbPerS: number; etaSeconds: number | null } | null;
  speedTest: { depth: number; mbPerS: number; fraction: number } | null;
  /** Whether the system keeps the machine awake during the job, and why not. */
  awake: { held: boolean; detail: string | null } | null;
  firstLoad: { layersDone: number; layersTotal: number; rssBytes: number | null; seconds: number } | null;
  model: ModelInfo | null;
  error: IpcError | null;
  /** A failure with its own screen (access denied, files that failed their hash). */
  problem: SetupProblem | null;
  /** Events folded so far (the e2e test reads the redraw rate from it). */
  events: number;
}

export const emptyJob: JobView = {
  phase: "idle", step: null, commit: null, totalBytes: 0, doneBytes: 0, keptBytes: null, speed: 0, eta: null,
  files: {}, retry: null, paused: null, notices: [], pack: null, speedTest: null, firstLoad: null, awake: null, model: null, error: null, problem: null,
  events: 0,
};

const MAX_NOTICES = 6;

export function foldSetup(v: JobView, e: SetupEvent): JobView {
  const n = { ...v, events: v.events + 1 };
  switch (e.type) {
    case "step":
      return { ...n, step: e.step };
    case "problem":
      return { ...n, problem: e.problem };
    case "pinned":
      // A new run began: an earlier failure's screen goes.
      return { ...n, phase: "running", error: null, problem: null, commit: e.commit, totalBytes: e.totalBytes, keptBytes: e.keptBytes, doneBytes: e.keptBytes };
    case "progress": {
      const files = { ...n.files };
      for (const f of e.files) files[f.path] = f;
      const totals = e.totalBytes > 0 ? { totalBytes: e.totalBytes, doneBytes: e.doneBytes, speed: e.speedBytesPerS, eta: e.etaSeconds } : {};
      // Bytes flowing again clear a pause line (the last retry stays, as "the last network
      // problem", until another replaces it).
      const flowing = e.speedBytesPerS > 0 ? { paused: null } : {};
      return { ...n, ...totals, ...flowing, files };
    }
    case "retry":
      return { ...n, retry: `${e.path}: ${e.reason} — retrying in ${Math.ceil(e.waitSeconds)} s (attempt ${e.attempt})` };
    case "paused":
      return { ...n, paused: `${e.reason} (${(e.freeBytes / 1e9).toFixed(2)} GB free, ${(e.neededBytes / 1e9).toFixed(2)} GB needed)` };
    case "notice":
      return { ...n, notices: [...n.notices, `${e.path}: ${e.message}`].slice(-MAX_NOTICES) };
    case "pack":
      return {
        ...n,
        pack: {
          layer: e.layer,
          layers: e.layers,
          mbPerS: e.mbPerS,
          etaSeconds: e.mbPerS > 0 ? Math.max(0, e.bytesTotal - e.bytesDone) / (e.mbPerS * 1e6) : null,
        },
      };
    case "awake":
      return { ...n, awake: { held: e.held, detail: e.detail } };
    case "firstLoad":
      return { ...n, firstLoad: { layersDone: e.layersDone, layersTotal: e.layersTotal, rssBytes: e.rssBytes, seconds: e.seconds } };
    case "speedTest":
      return { ...n, speedTest: { depth: e.depth, mbPerS: e.mbPerS, fraction: e.fraction } };
    case "ready":
      return { ...n, phase: "ready", model: e.model };
    case "stopped":
      return { ...n, phase: "paused" };
    case "failed":
      return { ...n, phase: "failed", error: e.error };
  }
}

/** Files in each state, for the grid's legend. */
export function countStates(files: Record<string, FileCell>): Record<string, number> {
  const out: Record<string, number> = {};
  for (const f of Object.values(files)) out[f.state] = (out[f.state] ?? 0) + 1;
  return out;
}

export function gb(bytes: number): string {
  return bytes >= 1e12 ? `${(bytes / 1e12).toFixed(2)} TB` : bytes >= 1e9 ? `${(bytes / 1e9).toFixed(1)} GB` : `${(bytes / 1e6).toFixed(1)} MB`;
}

export function duration(seconds: number | null): string {
  if (seconds === null || !Number.isFinite(seconds)) return "—";
  const s = Math.round(seconds);
  if (s >= 3600) return `${Math.floor(s / 3600)} h ${Math.floor((s % 3600) / 60)} min`;
  if (s >= 60) return `${Math.floor(s / 60)} min ${s % 60} s`;
  return `${s} s`;
}

/** The drive's best measured read rate in bytes/s — the highest of the speed test's QD1, QD16 and
 * the pattern sweep's best point — or null before the speed test ran. */
export function driveBestBytesPerS(speed: SpeedSummary | null): number | null {
  return speed ? Math.max(speed.qd1MbPerS, speed.qd16MbPerS, speed.readPattern?.mbPerS ?? 0) * 1e6 : null;
}
