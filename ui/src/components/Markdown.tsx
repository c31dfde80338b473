// Renders an assistant message's Markdown (already sanitized by markdown/render.ts) and wires the
// Copy buttons of its code blocks by event delegation (no inline handlers, so the CSP stays strict).
// Must not: insert any HTML that did not come out of renderMarkdown.
import { useMemo } from "preact/hooks";
import { renderMarkdown } from "../markdown/render";

async function copyCode(button: HTMLElement): Promise<void> {
  const code = button.closest(".code-block")?.querySelector("pre code");
  if (!code) return;
  try {
    await navigator.clipboard.writeText(code.textContent ?? "");
    button.textContent = "Copied";
  } catch {
    button.textContent = "Copy failed";
  }
  setTimeout(() => (button.textContent = "Copy"), 1500);
}

export function Markdown({ source }: { source: string }) {
  const html = useMemo(() => renderMarkdown(source), [source]);
  const onClick = (e: MouseEvent) => {
    const button = (e.target as HTMLElement | null)?.closest?.("button.copy-code");
    if (button instanceof HTMLElement) void copyCode(button);
  };
  return <div class="content markdown" onClick={onClick} dangerouslySetInnerHTML={{ __html: html }} />;
}
