// Settings › Performance › Speculative decoding: how many tokens a reply may draft from its
// own context and verify in one pass. Replies are the same word for word; only their speed
// changes, so it applies from the next reply with no reopen.
// Owns: the field and its check (parseDraft).
import { useState } from "preact/hooks";
import type { SpeculationChoice } from "../generated/ipc";
import * as engine from "../api/engine";

/** The draft length to save (0 = off), or the problem in words. */
export function parseDraft(text: string, max: number): number | string {
  const t = text.trim();
  const n = t === "" ? 0 : Number(t);
  if (!Number.isInteger(n) || n < 0 || n > max) return `Draft tokens: a whole number from 0 (off) to ${max}.`;
  return n;
}

export function SpeculationSetting({ saved, max }: { saved: SpeculationChoice; max: number }) {
  const [text, setText] = useState(saved.maxDraft === 0 ? "" : String(saved.maxDraft));
  const [status, setStatus] = useState<string | null>(null);
  const save = async (e: Event) => {
    e.preventDefault();
    const n = parseDraft(text, max);
    if (typeof n === "string") return setStatus(n);
    try {
      await engine.setSpeculation({ maxDraft: n });
      setStatus(n === 0 ? "Saved: replies decode one token per pass." : `Saved: from the next reply, up to ${n} drafted tokens are checked per pass.`);
    } catch (err) {
      setStatus((err as { message: string }).message);
    }
  };
  return (
    <div data-testid="speculation-setting">
      <h3>Speculative decoding</h3>
      <p class="muted">
        Drafts the next tokens from text the conversation already holds and checks them in one pass: the same reply, word for word, sooner when the
        reply repeats its context (code, lists) and the model streams from the drive. Off when empty or 0; applies from the next reply.
      </p>
      <form class="new-chat-form" onSubmit={(e) => void save(e)}>
        <label>
          <span>Draft tokens per pass</span>
          <input aria-label="Draft tokens per pass" inputMode="numeric" placeholder="0 (off)" value={text} onInput={(e) => setText(e.currentTarget.value)} />
        </label>
        <div class="settings-actions">
          <button type="submit">Save</button>
        </div>
      </form>
      {status && <p role="status" data-testid="speculation-status">{status}</p>}
    </div>
  );
}
