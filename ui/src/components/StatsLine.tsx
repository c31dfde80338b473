// The figures stored with an assistant message, on one line under it.
// Owns: which MessageStats fields are shown and their wording (tokens, time to first token, s/token,
// total, I/O share of wall clock, true resident hit rate, bytes read and the rate against the drive's
// best measured figure). Exact values go in tooltips.
// A remote backend's reply shows only what a remote reports (tokens, timing, its host).
// Must not: show tokens per second, GiB, or a raw hit rate (null true hit rate means all resident).
import { createContext } from "preact";
import { useContext } from "preact/hooks";
import type { MessageStats } from "../generated/ipc";
import {
  formatBytesExact,
  formatCount,
  formatDuration,
  formatGB,
  formatPercent,
  formatReadRate,
  formatSecondsPerToken,
} from "../state/format";

/** The drive's best measured read rate in bytes/s (the setup speed test, 16 expert reads in
 * flight), when it was measured: "reading at X of Y GB/s" compares against it. */
export const DriveSpeed = createContext<number | null>(null);

/** Tokens and timing, the figures every reply has; a remote's are counted by its server and
 *  timed from this machine. */
function Timing({ stats, remote }: { stats: MessageStats; remote: boolean }) {
  const tokensTitle = remote ? "As the server counted them" : `${formatCount(stats.prefilledTokens)} of the prompt tokens were prefilled`;
  const firstTitle = remote ? "From sending the request to the first piece of the reply" : "Time to first token";
  return (
    <>
      <span class="stat" data-stat="tokens" title={tokensTitle}>
        {formatCount(stats.promptTokens)} prompt + {formatCount(stats.outputTokens)} output tokens
      </span>
      <span class="stat" data-stat="ttft" title={firstTitle}>
        first token {formatDuration(stats.timeToFirstTokenMs)}
      </span>
      <span class="stat" data-stat="spt" title="Wall-clock seconds per generated token">
        {formatSecondsPerToken(stats.secondsPerToken)}
      </span>
      <span class="stat" data-stat="total" title="Total wall-clock time">
        total {formatDuration(stats.totalMs)}
      </span>
    </>
  );
}

export function StatsLine({ stats }: { stats: MessageStats }) {
  const drive = useContext(DriveSpeed);
  if (stats.remoteHost !== null) return <RemoteStatsLine stats={stats} host={stats.remoteHost} />;
  const rate = formatReadRate(stats.bytesRead, stats.totalMs, drive);
  const io = stats.ioShare === null ? "I/O share n/a" : `I/O ${formatPercent(stats.ioShare)} of wall clock`;
  const hit = stats.trueHitRate === null ? "all resident" : `true hit rate ${formatPercent(stats.trueHitRate)}`;
  return (
    <p class="stats" aria-label="Generation statistics">
      <Timing stats={stats} remote={false} />
      <span
        class="stat"
        data-stat="io"
        title="Time spent reading trunk and experts ÷ wall-clock time. Reads overlap compute and each other, so this can exceed 100%."
      >
        {io}
        {stats.ioShare !== null && <span class="stat-note"> (can exceed 100%)</span>}
      </span>
      <span
        class="stat"
        data-stat="hit"
        title="Expert requests served by an expert already resident before routing ran ÷ all expert requests (prefetch hits excluded)"
      >
        {hit}
      </span>
      <span
        class="stat"
        data-stat="read"
        title={`${formatBytesExact(stats.bytesRead)}${rate ? ` — the rate is bytes read ÷ the reply's wall time${drive ? "; the second figure is this drive's best in the setup speed test" : ""}` : ""}`}
      >
        read {formatGB(stats.bytesRead)}
        {rate && ` ${rate}`}
      </span>
      {stats.finishReason === "length" && <span class="stat" data-stat="reason">hit max tokens</span>}
      {stats.finishReason === "cancelled" && <span class="stat" data-stat="reason">stopped</span>}
      {stats.finishReason === "contextFull" && (
        <span class="stat" data-stat="reason" title="The conversation reached the context length its memory plan reserves; start a new chat or raise K3_CONTEXT_LENGTH">
          context full
        </span>
      )}
      {stats.finishReason !== "contextFull" && stats.contextNearlyFull && stats.contextLength !== null && (
        <span
          class="stat warn"
          data-stat="context"
          title="The conversation is near the context length its memory plan reserves; when it is full, replies stop. Start a new chat or raise the context in Settings › Memory."
        >
          context nearly full: {(stats.promptTokens + stats.outputTokens).toLocaleString("en-US")} of {stats.contextLength.toLocaleString("en-US")} positions
        </span>
      )}
      {stats.seed !== null && (
        <span class="stat" data-stat="seed" title={`Model: ${stats.model}`}>
          seed {stats.seed}
        </span>
      )}
    </p>
  );
}

/** A remote reply's figures: the server's token counts and the timing seen here — no I/O, hit rate
 *  or bytes read, which a remote does not report. */
function RemoteStatsLine({ stats, host }: { stats: MessageStats; host: string }) {
  return (
    <p class="stats" aria-label="Generation statistics" data-remote="true">
      <span class="stat" data-stat="remote" title={`Answered by ${stats.model} on ${host}: the prompt left this machine`}>
        answered by {host}
      </span>
      <Timing stats={stats} remote />
      {stats.finishReason === "length" && <span class="stat" data-stat="reason">hit max tokens</span>}
      {stats.finishReason === "cancelled" && <span class="stat" data-stat="reason">stopped</span>}
    </p>
  );
}
