// Renders an assistant message's Markdown (already sanitized by markdown/render.ts) and wires the
// Copy buttons of its code blocks and its links (opened in the system browser through the app,
// never navigated to in the window) by event delegation (no inline handlers: the CSP stays strict).
// A middle click (auxclick) goes to the app too: unhandled, the engine opens a link with
// target=_blank in a new window itself (found by ui/tests/browser.mjs).
// Must not: insert any HTML that did not come out of renderMarkdown.
import { useMemo } from "preact/hooks";
import { openInBrowser } from "../controllers/links";
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

/** A click on a link of the reply: the app opens it in the system browser, the window stays. */
function openLinkOf(e: MouseEvent): void {
  const link = (e.target as HTMLElement | null)?.closest?.("a[href]");
  if (!(link instanceof HTMLAnchorElement)) return;
  e.preventDefault();
  openInBrowser(link.href);
}

export function Markdown({ source }: { source: string }) {
  const html = useMemo(() => renderMarkdown(source), [source]);
  const onClick = (e: MouseEvent) => {
    const target = e.target as HTMLElement | null;
    const button = target?.closest?.("button.copy-code");
    if (button instanceof HTMLElement) void copyCode(button);
    openLinkOf(e);
  };
  const onAuxClick = (e: MouseEvent) => {
    if (e.button === 1) openLinkOf(e);
  };
  return (
    <div class="content markdown" onClick={onClick} onAuxClick={onAuxClick} dangerouslySetInnerHTML={{ __html: html }} />
  );
}
