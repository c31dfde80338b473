// Renders an assistant message's Markdown (already sanitized by markdown/render.ts) and wires the
// Copy buttons of its code blocks and its links (opened in the system browser through the app,
// never navigated to in the window) by event delegation (no inline handlers: the CSP stays strict).
// Must not: insert any HTML that did not come out of renderMarkdown.
import { useMemo } from "preact/hooks";
import { openLink } from "../api/engine";
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
    const target = e.target as HTMLElement | null;
    const button = target?.closest?.("button.copy-code");
    if (button instanceof HTMLElement) void copyCode(button);
    const link = target?.closest?.("a[href]");
    if (link instanceof HTMLAnchorElement) {
      e.preventDefault();
      openLink(link.href).catch(() => undefined);
    }
  };
  return <div class="content markdown" onClick={onClick} dangerouslySetInnerHTML={{ __html: html }} />;
}
