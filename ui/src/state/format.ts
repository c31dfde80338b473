// Number formatting for the chat window, following the product conventions.
// Owns: GB = 1e9 bytes (never GiB), s/token (never tokens/s), percentages, durations.
// Must not: round a small s/token to 0 (the demo runs at ~0.001 s/token): significant digits, not decimals.

const sig3 = new Intl.NumberFormat("en-US", { maximumSignificantDigits: 3 });
const int = new Intl.NumberFormat("en-US", { maximumFractionDigits: 0 });
const gb2 = new Intl.NumberFormat("en-US", { minimumFractionDigits: 2, maximumFractionDigits: 2 });

/** 12_345_678_901 → "12.35 GB"; below 1 GB three significant digits ("0.0175 GB"). */
export function formatGB(bytes: number): string {
  if (bytes === 0) return "0 GB";
  const gb = bytes / 1e9;
  return `${gb >= 1 ? gb2.format(gb) : sig3.format(gb)} GB`;
}

/** Exact bytes for tooltips: "12,345,678 B". */
export function formatBytesExact(bytes: number): string {
  return `${int.format(bytes)} B`;
}

/** Seconds per token with three significant digits, or "—" when not measured yet. */
export function formatSecondsPerToken(s: number | null): string {
  return s === null || !Number.isFinite(s) ? "— s/token" : `${sig3.format(s)} s/token`;
}

/** 0.523 → "52%"; shares above 1 stay above 100%. */
export function formatPercent(share: number): string {
  return `${int.format(share * 100)}%`;
}

export function formatCount(n: number): string {
  return int.format(n);
}

/** 850 → "850 ms", 12_300 → "12.3 s", 192_000 → "3 m 12 s", 3_900_000 → "1 h 05 m". */
export function formatDuration(ms: number): string {
  if (ms < 1000) return `${int.format(ms)} ms`;
  const s = ms / 1000;
  if (s < 60) return `${sig3.format(s)} s`;
  const total = Math.round(s);
  const h = Math.floor(total / 3600);
  const m = Math.floor((total % 3600) / 60);
  const sec = total % 60;
  return h > 0 ? `${h} h ${String(m).padStart(2, "0")} m` : `${m} m ${sec} s`;
}

/** Below this a reply's reads are not a rate worth showing (a resident model reads almost nothing). */
export const READ_RATE_MIN_BYTES = 1e8;

/** "at 2.10 of 2.80 GB/s": bytes read ÷ the reply's wall time, against the drive's best measured
 * rate when there is one; null when too little was read to mean anything. */
export function formatReadRate(bytes: number, totalMs: number, driveBytesPerS: number | null): string | null {
  if (bytes < READ_RATE_MIN_BYTES || totalMs <= 0) return null;
  const rate = bytes / (totalMs / 1000) / 1e9;
  const shown = rate >= 1 ? gb2.format(rate) : sig3.format(rate);
  return driveBytesPerS && driveBytesPerS > 0 ? `at ${shown} of ${gb2.format(driveBytesPerS / 1e9)} GB/s` : `at ${shown} GB/s`;
}
