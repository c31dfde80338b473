// One whole-number setting saved on its own (no reopen): a heading, what it does, the field,
// Save, and what saving did. Settings › Performance uses it for speculative decoding and for
// the conversations whose engine state is kept.
// Owns: the form's status line (the counts' check, parseCount, is in state/counts.ts).
import { useState } from "preact/hooks";

export interface CountSettingProps {
  testId: string;
  title: string;
  children: preact.ComponentChildren;
  label: string;
  placeholder: string;
  initial: string;
  parse(text: string): number | string;
  save(n: number): Promise<unknown>;
  /** What the saved count means, in words. */
  saved(n: number): string;
}

export function CountSetting(p: CountSettingProps) {
  const [text, setText] = useState(p.initial);
  const [status, setStatus] = useState<string | null>(null);
  const submit = async (e: Event) => {
    e.preventDefault();
    const n = p.parse(text);
    if (typeof n === "string") return setStatus(n);
    try {
      await p.save(n);
      setStatus(p.saved(n));
    } catch (err) {
      setStatus((err as { message: string }).message);
    }
  };
  return (
    <div data-testid={p.testId}>
      <h3>{p.title}</h3>
      <p class="muted">{p.children}</p>
      <form class="new-chat-form" onSubmit={(e) => void submit(e)}>
        <label>
          <span>{p.label}</span>
          <input aria-label={p.label} inputMode="numeric" placeholder={p.placeholder} value={text} onInput={(e) => setText(e.currentTarget.value)} />
        </label>
        <div class="settings-actions">
          <button type="submit">Save</button>
        </div>
      </form>
      {status && <p role="status" data-testid={`${p.testId}-status`}>{status}</p>}
    </div>
  );
}
