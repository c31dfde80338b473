// Settings › Performance, the pure half: the thread form and its checks, the draft length's check,
// and the drive speed in words. Tested in components/PerformanceSettings.test.tsx; the controller
// (controllers/performance.ts) applies, the components draw.
import type { SpeedSummary, Threads } from "../generated/ipc";
import { parseCount } from "./counts";

export interface ThreadForm {
  /** "" = the default (every core, or what OMP_NUM_THREADS says). */
  compute: string;
  /** "" = the default (4, or what K3_ASYNC_IO_THREADS says). */
  io: string;
}

export const toThreadForm = (t: Threads): ThreadForm => ({ compute: t.compute?.toString() ?? "", io: t.io?.toString() ?? "" });

/** The counts to save, or the first problem in words. */
export function parseThreads(f: ThreadForm, cores: number, maxIo: number): Threads | string {
  const count = (text: string, what: string, max: number): number | null | string => {
    const t = text.trim();
    if (t === "") return null;
    const n = Number(t);
    if (!Number.isInteger(n) || n < 1 || n > max) return `${what}: a whole number from 1 to ${max}, or empty for the default.`;
    return n;
  };
  const compute = count(f.compute, "Compute threads", cores);
  if (typeof compute === "string") return compute;
  const io = count(f.io, "I/O threads", maxIo);
  if (typeof io === "string") return io;
  return { compute, io };
}

/** The draft length to save (0 = off), or the problem in words. */
export function parseDraft(text: string, max: number): number | string {
  return parseCount(text, max, 0, "Draft tokens");
}

export const mib = (bytes: number) => `${Math.round(bytes / 1048576)} MiB`;

export function speedLine(s: SpeedSummary): string {
  const best = s.readPattern ? ` · best ${mib(s.readPattern.requestBytes)} × ${s.readPattern.depth} in flight: ${s.readPattern.mbPerS.toFixed(0)} MB/s` : "";
  return `one at a time ${s.qd1MbPerS.toFixed(0)} MB/s · 16 in flight ${s.qd16MbPerS.toFixed(0)} MB/s${best}${s.direct ? "" : " (through the page cache: O_DIRECT refused)"}`;
}
