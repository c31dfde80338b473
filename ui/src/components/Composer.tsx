// The message box: Enter sends, Shift+Enter inserts a newline, Esc stops a running generation.
// Send becomes Stop while a reply is being written. The draft is kept per conversation in
// localStorage so it survives a restart.
// Must not: send while a generation runs (the engine runs one at a time).
import { useEffect, useRef, useState } from "preact/hooks";

interface Props {
  conversationId: number | null;
  busy: boolean;
  canSend: boolean;
  onSend(text: string): Promise<boolean>;
  onStop(): void;
}

const draftKey = (id: number | null) => `k3.draft.${id ?? "new"}`;

function loadDraft(id: number | null): string {
  try {
    return localStorage.getItem(draftKey(id)) ?? "";
  } catch {
    return "";
  }
}

function saveDraft(id: number | null, text: string): void {
  try {
    if (text) localStorage.setItem(draftKey(id), text);
    else localStorage.removeItem(draftKey(id));
  } catch {
    // storage full or disabled: the draft just isn't kept
  }
}

export function Composer({ conversationId, busy, canSend, onSend, onStop }: Props) {
  const [text, setText] = useState(() => loadDraft(conversationId));
  const ref = useRef<HTMLTextAreaElement>(null);

  useEffect(() => {
    setText(loadDraft(conversationId));
    ref.current?.focus();
  }, [conversationId]);

  const update = (value: string) => {
    setText(value);
    saveDraft(conversationId, value);
  };

  const send = async () => {
    if (busy || !canSend || !text.trim()) return;
    const sent = text;
    update("");
    const ok = await onSend(sent);
    if (!ok) update(sent);
  };

  const onKeyDown = (e: KeyboardEvent) => {
    if (e.isComposing) return;
    if (e.key === "Enter" && !e.shiftKey) {
      e.preventDefault();
      void send();
    } else if (e.key === "Escape" && busy) {
      e.preventDefault();
      e.stopPropagation();
      onStop();
    }
  };

  return (
    <form
      class="composer"
      onSubmit={(e) => {
        e.preventDefault();
        void send();
      }}
    >
      <textarea
        id="composer"
        ref={ref}
        aria-label="Message"
        placeholder="Message K3 — Enter to send, Shift+Enter for a new line"
        rows={Math.min(10, Math.max(2, text.split("\n").length))}
        value={text}
        onInput={(e) => update(e.currentTarget.value)}
        onKeyDown={onKeyDown}
      />
      {busy ? (
        <button type="button" class="stop" aria-label="Stop" title="Stop (Esc)" onClick={onStop}>
          Stop
        </button>
      ) : (
        <button type="submit" class="primary" aria-label="Send" title="Send (Enter)" disabled={!canSend || !text.trim()}>
          Send
        </button>
      )}
    </form>
  );
}
