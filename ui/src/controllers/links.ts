// Links in replies: opened in the system browser through the app, never navigated to in the window.
// Owns: the one engine call for it. Must not: throw (a link that cannot be opened is ignored).
import { openLink } from "../api/engine";

export function openInBrowser(href: string): void {
  openLink(href).catch(() => undefined);
}
