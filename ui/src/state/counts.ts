// A whole-number setting's check, the pure half of components/CountSetting.tsx: what the user
// typed as a count from 0 to a maximum, or the problem in words. Used by Settings › Performance
// (draft tokens, conversations kept).
/** The count in `text` (empty means `empty`), or the problem in words. */
export function parseCount(text: string, max: number, empty: number, what: string): number | string {
  const t = text.trim();
  const n = t === "" ? empty : Number(t);
  if (!Number.isInteger(n) || n < 0 || n > max) return `${what}: a whole number from 0 to ${max}.`;
  return n;
}
