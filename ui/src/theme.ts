// Light / dark theme and text size: the theme follows prefers-color-scheme unless the user picked
// one; both are kept in localStorage and announced with a `k3-appearance` event so every control
// showing them (the top bar's toggle, Settings › Appearance) stays in step.
// Owns: the `data-theme` attribute on <html> (absent = system; the CSS reads it) and the root
// font size (every size in the CSS is in rem).
export type ThemeChoice = "system" | "light" | "dark";

const KEY = "k3.theme";
const ORDER: ThemeChoice[] = ["system", "light", "dark"];

export function loadTheme(): ThemeChoice {
  try {
    const v = localStorage.getItem(KEY);
    return v === "light" || v === "dark" ? v : "system";
  } catch {
    return "system";
  }
}

export function applyTheme(choice: ThemeChoice): void {
  const root = document.documentElement;
  if (choice === "system") delete root.dataset.theme;
  else root.dataset.theme = choice;
  try {
    if (choice === "system") localStorage.removeItem(KEY);
    else localStorage.setItem(KEY, choice);
  } catch {
    // not kept: fine
  }
  window.dispatchEvent(new Event(APPEARANCE_EVENT));
}

/** Fired on window when the theme or the text size changes. */
export const APPEARANCE_EVENT = "k3-appearance";

const SIZE_KEY = "k3.fontSize";
/** Text sizes, as a percentage of the system's. */
export const FONT_SIZES = [87.5, 100, 112.5, 125, 150] as const;
export type FontSize = (typeof FONT_SIZES)[number];

export function loadFontSize(): FontSize {
  try {
    const v = Number(localStorage.getItem(SIZE_KEY));
    return (FONT_SIZES as readonly number[]).includes(v) ? (v as FontSize) : 100;
  } catch {
    return 100;
  }
}

export function applyFontSize(size: FontSize): void {
  document.documentElement.style.fontSize = size === 100 ? "" : `${size}%`;
  try {
    if (size === 100) localStorage.removeItem(SIZE_KEY);
    else localStorage.setItem(SIZE_KEY, String(size));
  } catch {
    // not kept: fine
  }
  window.dispatchEvent(new Event(APPEARANCE_EVENT));
}

export function nextTheme(choice: ThemeChoice): ThemeChoice {
  return ORDER[(ORDER.indexOf(choice) + 1) % ORDER.length]!;
}
