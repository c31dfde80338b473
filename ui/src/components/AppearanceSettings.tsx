// Settings › Appearance: the theme (System / Light / Dark, the same choice as the top bar's
// toggle) and the text size; both apply at once and are kept for the next start (theme.ts).
import { useEffect, useState } from "preact/hooks";
import { APPEARANCE_EVENT, FONT_SIZES, type FontSize, type ThemeChoice, applyFontSize, applyTheme, loadFontSize, loadTheme } from "../theme";

const THEMES: { id: ThemeChoice; label: string }[] = [
  { id: "system", label: "System" },
  { id: "light", label: "Light" },
  { id: "dark", label: "Dark" },
];

export function AppearanceSettings() {
  const [theme, setTheme] = useState(loadTheme);
  const [size, setSize] = useState(loadFontSize);
  useEffect(() => {
    const follow = () => {
      setTheme(loadTheme());
      setSize(loadFontSize());
    };
    window.addEventListener(APPEARANCE_EVENT, follow);
    return () => window.removeEventListener(APPEARANCE_EVENT, follow);
  }, []);
  return (
    <section class="settings-section" aria-labelledby="appearance-title" data-testid="appearance-settings">
      <h2 id="appearance-title">Appearance</h2>
      <fieldset class="preset-choices">
        <legend>Theme</legend>
        {THEMES.map((t) => (
          <label key={t.id}>
            <input type="radio" name="theme" value={t.id} checked={theme === t.id} onChange={() => applyTheme(t.id)} /> {t.label}
          </label>
        ))}
      </fieldset>
      <label class="font-size">
        Text size{" "}
        <select aria-label="Text size" value={String(size)} onChange={(e) => applyFontSize(Number(e.currentTarget.value) as FontSize)}>
          {FONT_SIZES.map((s) => (
            <option key={s} value={String(s)}>
              {s}%
            </option>
          ))}
        </select>
      </label>
    </section>
  );
}
