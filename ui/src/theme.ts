// Light / dark theme: follows prefers-color-scheme unless the user picked one, kept in localStorage.
// Owns: the `data-theme` attribute on <html> (absent = system); the CSS reads it.
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
}

export function nextTheme(choice: ThemeChoice): ThemeChoice {
  return ORDER[(ORDER.indexOf(choice) + 1) % ORDER.length]!;
}
