// The Memory and Disk tabs' data over time: readings from the `dashboard` command folded into
// bounded series the charts draw, and the advice line computed from what was measured.
// Owns: the series (RSS and plan over time, read rate between readings, the per-token timeline),
// their bounds (SERIES_POINTS, TIMELINE_TOKENS), the averages the advice uses, and the advice rules.
// Must not: measure anything or call the backend: `fold` is pure, so its tests are exact.
// Definitions (PRODUCT.md §1.3): compute = wall − I/O wait (waits measured at the wait points);
// the read rate is the bytes read between two readings ÷ the time between them; prefill (a reply's
// first token) is kept on the timeline but left out of the averages.
import type { Dashboard, TokenPoint } from "../generated/ipc";

/** Points kept per time series (2 minutes at 5 readings a second). */
export const SERIES_POINTS = 600;
/** Tokens kept on the timeline. */
export const TIMELINE_TOKENS = 240;
/** Decode tokens the advice averages over. */
export const ADVICE_TOKENS = 32;

export interface DashboardSeries {
  /** Reading times, seconds since the epoch. */
  at: number[];
  rss: (number | null)[];
  plan: (number | null)[];
  /** Bytes/s read between the previous reading and this one (null for the first). */
  readRate: (number | null)[];
  readsInFlight: (number | null)[];
  tokens: TokenPoint[];
  last: Dashboard | null;
}

export const emptySeries = (): DashboardSeries => ({ at: [], rss: [], plan: [], readRate: [], readsInFlight: [], tokens: [], last: null });

function push<T>(xs: T[], x: T, max: number): T[] {
  const out = xs.length >= max ? xs.slice(xs.length - max + 1) : xs.slice();
  out.push(x);
  return out;
}

/** `s` with reading `d` appended (bounded; tokens already on the timeline are not added twice). */
export function fold(s: DashboardSeries, d: Dashboard): DashboardSeries {
  const prev = s.last;
  let rate: number | null = null;
  if (prev && d.atSeconds > prev.atSeconds) {
    const bytes = d.trunkBytesRead + d.expertBytesRead - (prev.trunkBytesRead + prev.expertBytesRead);
    // A model opened in between restarts the counters: no rate for that gap.
    rate = bytes >= 0 ? bytes / (d.atSeconds - prev.atSeconds) : null;
  }
  const seen = s.tokens.length ? s.tokens[s.tokens.length - 1]!.seq : 0;
  const fresh = d.tokens.filter((t) => t.seq > seen);
  const tokens = fresh.length ? [...s.tokens, ...fresh].slice(-TIMELINE_TOKENS) : s.tokens;
  return {
    at: push(s.at, d.atSeconds, SERIES_POINTS),
    rss: push(s.rss, d.rssBytes, SERIES_POINTS),
    plan: push(s.plan, d.planBytes, SERIES_POINTS),
    readRate: push(s.readRate, rate, SERIES_POINTS),
    readsInFlight: push(s.readsInFlight, d.readsInFlight, SERIES_POINTS),
    tokens,
    last: { ...d, tokens: [] },
  };
}

/** Readings the shown read rate is averaged over (2 s at two readings a second: one reading's
 * half second says little when a token takes seconds). */
export const RATE_READINGS = 4;

/** The mean read rate of the last RATE_READINGS intervals; null before two readings. */
export function recentRate(rates: (number | null)[]): number | null {
  const last = rates.slice(-RATE_READINGS).filter((r): r is number => r !== null);
  return last.length ? last.reduce((a, r) => a + r, 0) / last.length : null;
}

/** The shortest span a time axis shows, in seconds. */
export const RECENT_SECONDS = 30;

/** A time axis's range: at least the last RECENT_SECONDS, ending at the newest reading. With no
 * reading (min and max null or not finite) it is the RECENT_SECONDS before now, so an idle
 * chart shows the last half minute rather than a span uPlot makes up (seen: 2027–2029). */
export function recentWindow(min: number | null, max: number | null, nowSeconds: number): [number, number] {
  if (min == null || max == null || !Number.isFinite(min) || !Number.isFinite(max)) return [nowSeconds - RECENT_SECONDS, nowSeconds];
  return max - min < RECENT_SECONDS ? [max - RECENT_SECONDS, max] : [min, max];
}

/** A value axis from 0 to a tenth above the largest value, and at least to `floor` (a chart
 * with no reading, or only zeros, keeps a readable scale: 1 GB, not 1 byte shown as
 * "1.00e-9 GB"). */
export function upTo(max: number | null, floor: number): [number, number] {
  const top = max != null && Number.isFinite(max) ? max * 1.1 : 0;
  return [0, Math.max(top, floor)];
}

/** Means over the last decode tokens (prefill left out). */
export interface TokenAverages {
  tokens: number;
  wallMs: number;
  trunkWaitMs: number;
  expertWaitMs: number;
  computeMs: number;
  trunkBytes: number;
  expertBytes: number;
  /** True resident hits ÷ expert requests (null when no expert was requested). */
  trueHitRate: number | null;
}

export function averages(tokens: TokenPoint[], n = ADVICE_TOKENS): TokenAverages | null {
  const decode = tokens.filter((t) => !t.prefill).slice(-n);
  if (decode.length === 0) return null;
  const mean = (f: (t: TokenPoint) => number) => decode.reduce((a, t) => a + f(t), 0) / decode.length;
  const requests = decode.reduce((a, t) => a + t.expertRequests, 0);
  const hits = decode.reduce((a, t) => a + t.trueHits, 0);
  return {
    tokens: decode.length,
    wallMs: mean((t) => t.wallMs),
    trunkWaitMs: mean((t) => t.trunkWaitMs),
    expertWaitMs: mean((t) => t.expertWaitMs),
    computeMs: mean((t) => t.computeMs),
    trunkBytes: mean((t) => t.trunkBytes),
    expertBytes: mean((t) => t.expertBytes),
    trueHitRate: requests > 0 ? hits / requests : null,
  };
}

/** What the advice rules look at besides the token averages. */
export interface AdviceFacts {
  /** The drive's best measured read rate (speed test), bytes/s. */
  driveBytesPerS: number | null;
  /** Memory available beyond what the plan may still take, bytes (null: unknown). */
  spareBytes: number | null;
  pinnedLayers: number;
  layers: number;
}

/** A faster drive this advice compares with (3 GB/s: a common PCIe 3 NVMe). */
export const FASTER_DRIVE_BYTES_PER_S = 3e9;
const GB = 1e9;
/** Savings below this are not worth a line. */
const WORTH_MS = 50;

const secs = (ms: number) => `${(ms / 1000).toPrecision(2)} s`;

/** One or two sentences from what was measured; empty without decode tokens. Each rule names its figures. */
export function advice(a: TokenAverages | null, f: AdviceFacts): string[] {
  if (!a) return [];
  const out: string[] = [];
  const waitMs = a.trunkWaitMs + a.expertWaitMs;
  const bytes = a.trunkBytes + a.expertBytes;
  if (bytes === 0 && waitMs === 0) {
    out.push(`Nothing is read from the drive: every weight this model uses is in RAM, so each token is compute (${secs(a.computeMs)}).`);
    return out;
  }
  // Reads scale with the drive's rate; compute does not.
  if (f.driveBytesPerS && f.driveBytesPerS < FASTER_DRIVE_BYTES_PER_S && waitMs > 0) {
    const saved = waitMs * (1 - f.driveBytesPerS / FASTER_DRIVE_BYTES_PER_S);
    if (saved >= WORTH_MS)
      out.push(
        `A 3 GB/s drive would save ~${secs(saved)}/token: tokens wait ${secs(waitMs)} on reads from this ${(f.driveBytesPerS / GB).toFixed(2)} GB/s drive.`,
      );
  }
  // Pinning trunk removes its reads; the wait on the trunk shrinks by the share of its bytes pinned.
  if (a.trunkBytes > 0 && a.trunkWaitMs > 0 && f.spareBytes !== null && f.spareBytes > GB) {
    const pinBytes = Math.min(f.spareBytes - GB, a.trunkBytes);
    const saved = a.trunkWaitMs * (pinBytes / a.trunkBytes);
    if (pinBytes >= GB / 2 && saved >= WORTH_MS)
      out.push(
        `Pinning ${(pinBytes / GB).toFixed(1)} GB more trunk saves ~${secs(saved)}/token (${(a.trunkBytes / GB).toFixed(2)} GB of trunk is read per token; ${(f.spareBytes / GB).toFixed(1)} GB is spare).`,
      );
  }
  // A bigger expert cache helps only if experts repeat; a low true hit rate with a large share of
  // expert wait says the cache is not paying for itself.
  if (a.trueHitRate !== null && a.trueHitRate < 0.2 && f.pinnedLayers < f.layers && a.trunkWaitMs > a.expertWaitMs)
    out.push(
      `The expert cache hits ${(a.trueHitRate * 100).toFixed(0)}% of requests: memory does more as pinned trunk than as cache here ("max" is not faster than "server").`,
    );
  if (waitMs < 0.1 * a.wallMs)
    out.push(`Compute is ${((a.computeMs / a.wallMs) * 100).toFixed(0)}% of each token: a faster drive would not help.`);
  return out;
}
