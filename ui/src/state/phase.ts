// Text of the phase strip: Queued → Reading prompt (done/total, ETA) → Writing (token k/max,
// s/token, ETA) → Done / Stopped / Failed.
// Owns: the wording of each phase. Must not: compute tokens per second (the product shows s/token).
import type { IpcError } from "../generated/ipc";
import { formatCount, formatDuration, formatSecondsPerToken } from "./format";
import type { Phase } from "./stream";

/** "Failed: …" line; an expert read failure means the output is unsound, never a warning. */
export function failureText(error: IpcError): string {
  const head = error.code === "EXPERT_READ" ? "Failed: output unsound." : "Failed:";
  return `${head} ${error.message}`;
}

export function phaseText(p: Phase): string {
  switch (p.kind) {
    case "starting":
      return "Sending…";
    case "queued":
      return p.position > 0 ? `Queued (${formatCount(p.position)} ahead)` : "Queued";
    case "prefill": {
      if (p.total === null) return "Reading prompt…";
      const eta = p.etaMs !== null && p.done < p.total ? ` · about ${formatDuration(p.etaMs)} left` : "";
      return `Reading prompt ${formatCount(p.done)}/${formatCount(p.total)}${eta}`;
    }
    case "writing": {
      const left = p.secondsPerToken !== null ? (p.maxTokens - p.tokens) * p.secondsPerToken * 1000 : null;
      const eta = left !== null && left > 0 ? ` · at most ${formatDuration(left)} left` : "";
      return `Writing token ${formatCount(p.tokens)}/${formatCount(p.maxTokens)} · ${formatSecondsPerToken(p.secondsPerToken)}${eta}`;
    }
    case "done":
      switch (p.reason) {
        case "length":
          return "Done (reached max tokens)";
        case "contextFull":
          return "Done (the conversation filled its context)";
        case "stop":
          return "Done";
      }
    case "stopped":
      return "Stopped";
    case "failed":
      return failureText(p.error);
    default: {
      const unhandled: never = p;
      return unhandled;
    }
  }
}
