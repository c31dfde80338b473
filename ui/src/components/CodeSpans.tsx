// A verdict's message with its `backticked` names (a preset, a command) set as code, as the
// doctor writes them for a terminal. Owns: where the text is cut (codeSpans).
// Must not: change the text or let markup in: the spans hold text only, and an unpaired
// backtick stays a backtick.

/** One run of a message: code (between a pair of backticks) or plain text. */
export interface Span {
  code: boolean;
  text: string;
}

/** `text` cut at paired backticks; the backticks themselves are dropped, an unpaired one is kept
 *  as text. Empty runs are left out. */
export function codeSpans(text: string): Span[] {
  const parts = text.split("`");
  // An even number of parts means one backtick had no partner: it goes back into the last run.
  const unpaired = parts.length % 2 === 0 ? parts.splice(-2, 2).join("`") : null;
  const spans = parts.map((part, i) => ({ code: i % 2 === 1, text: part }));
  if (unpaired !== null) spans.push({ code: false, text: unpaired });
  return spans.filter((s) => s.text !== "");
}

export function CodeSpans({ text }: { text: string }) {
  return (
    <>
      {codeSpans(text).map((s, i) => (s.code ? <code key={i}>{s.text}</code> : <span key={i}>{s.text}</span>))}
    </>
  );
}
