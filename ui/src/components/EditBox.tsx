// Inline editor for a user message: Save & resend (drops every later message) or Cancel.
// Keys: Enter saves, Shift+Enter is a newline, Esc cancels.
import { useEffect, useRef, useState } from "preact/hooks";

interface Props {
  initial: string;
  onSave(text: string): void;
  onCancel(): void;
}

export function EditBox({ initial, onSave, onCancel }: Props) {
  const [text, setText] = useState(initial);
  const ref = useRef<HTMLTextAreaElement>(null);
  useEffect(() => ref.current?.focus(), []);
  const save = () => {
    if (text.trim()) onSave(text);
  };
  const onKeyDown = (e: KeyboardEvent) => {
    if (e.isComposing) return;
    if (e.key === "Enter" && !e.shiftKey) {
      e.preventDefault();
      save();
    } else if (e.key === "Escape") {
      e.preventDefault();
      e.stopPropagation();
      onCancel();
    }
  };
  return (
    <div class="edit-box">
      <textarea
        ref={ref}
        class="edit-text"
        aria-label="Edit message text"
        value={text}
        rows={Math.min(12, Math.max(2, text.split("\n").length))}
        onInput={(e) => setText(e.currentTarget.value)}
        onKeyDown={onKeyDown}
      />
      <div class="edit-actions">
        <button type="button" class="primary" aria-label="Save and resend" disabled={!text.trim()} onClick={save}>
          Save &amp; resend
        </button>
        <button type="button" aria-label="Cancel edit" onClick={onCancel}>
          Cancel
        </button>
      </div>
    </div>
  );
}
