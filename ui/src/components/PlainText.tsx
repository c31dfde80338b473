// Long plain text (a reply while it streams, user messages, the thinking channel) as a run of
// short inline spans. Owns: where the text is cut (textChunks).
// Why: Chromium lays out one long unbroken word (a base64 blob, a minified line: nothing but the
// model decides) in time quadratic in its length when it must wrap — 100 000 characters took 8 s
// per layout, every frame while it streams (ui/tests/browser.mjs, payload "one 100 000-character
// line"). Spans of at most CHUNK characters wrap the same (a span boundary is no break
// opportunity) and lay out in milliseconds. The spans hold text only: no markup can come in.
// Must not: change the text (their textContent joined is the text, byte for byte).

/** Longest span, in UTF-16 code units (a cut is moved forward so it never splits a character). */
export const CHUNK = 96;

// A cut before one of these would separate it from the character it belongs to.
const JOINS = /[\p{M}\u200C\u200D\uFE00-\uFE0F\u{1F3FB}-\u{1F3FF}\u{E0020}-\u{E007F}]/u;

/** `text` cut into pieces of about CHUNK code units, never inside a surrogate pair, before a
 *  combining mark, joiner or variation selector, or after a zero-width joiner. Earlier pieces do
 *  not change when text is appended (so a streaming reply re-renders only its last span). */
export function textChunks(text: string): string[] {
  const out: string[] = [];
  let start = 0;
  while (text.length - start > CHUNK) {
    let cut = start + CHUNK;
    while (cut < text.length) {
      const code = text.charCodeAt(cut);
      const lowSurrogate = code >= 0xdc00 && code <= 0xdfff;
      const next = text.codePointAt(cut) ?? 0;
      if (!lowSurrogate && !JOINS.test(String.fromCodePoint(next)) && text[cut - 1] !== "\u200D") break;
      cut++;
    }
    out.push(text.slice(start, cut));
    start = cut;
  }
  if (start < text.length || out.length === 0) out.push(text.slice(start));
  return out;
}

export function PlainText({ text }: { text: string }) {
  if (text.length <= CHUNK) return <>{text}</>;
  return (
    <>
      {textChunks(text).map((c, i) => (
        <span key={i}>{c}</span>
      ))}
    </>
  );
}
