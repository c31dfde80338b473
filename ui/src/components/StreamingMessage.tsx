// The reply while it is being written: plain text assembled from token events (the thinking
// channel apart, in its collapsed block), its phase and the live figures. Also shown for a failed generation with nothing saved, so its partial text stays.
// Owns: `.message[data-status=streaming] .content`. Plain text on purpose: Markdown is rendered once the
// saved message arrives (re-parsing and sanitizing the whole reply every frame at ~1000 tokens/s is waste).
import { formatPercent, formatSecondsPerToken } from "../state/format";
import { failureText, phaseText } from "../state/phase";
import type { Stream } from "../state/stream";
import { Think } from "./MessageView";
import { PlainText } from "./PlainText";

export function StreamingMessage({ stream: s }: { stream: Stream }) {
  const failed = s.phase.kind === "failed";
  const live = s.live;
  return (
    <article
      class="message assistant streaming"
      data-role="assistant"
      data-status={failed ? "failed" : "streaming"}
      aria-label="K3 is replying"
    >
      <header class="message-head">
        <span class="who">K3</span>
        <span class={`badge ${failed ? "failed" : "live"}`}>
          {s.phase.kind === "failed" ? failureText(s.phase.error) : phaseText(s.phase)}
        </span>
      </header>
      {s.think && <Think text={s.think} />}
      <div class="content plain" aria-live="polite" aria-busy={!failed}>
        <PlainText text={s.text} />
        {!failed && <span class="cursor" aria-hidden="true" />}
      </div>
      {live && !failed && (
        <p class="live-stats" aria-label="Live statistics">
          <span>{live.tokens} tokens</span>
          <span>{formatSecondsPerToken(live.secondsPerToken)}</span>
          {live.ioShare !== null && <span>I/O {formatPercent(live.ioShare)} of wall clock (can exceed 100%)</span>}
          <span>{live.trueHitRate === null ? "all resident" : `true hit rate ${formatPercent(live.trueHitRate)}`}</span>
        </p>
      )}
    </article>
  );
}
