// Code highlighting for Markdown fences: highlight.js core with a handful of languages registered.
// Owns: which languages exist and their aliases. Must not: auto-detect (slow on long replies, and
// wrong on short ones); an unknown language is shown as escaped plain text.
import hljs from "highlight.js/lib/core";
import bash from "highlight.js/lib/languages/bash";
import c from "highlight.js/lib/languages/c";
import cpp from "highlight.js/lib/languages/cpp";
import css from "highlight.js/lib/languages/css";
import diff from "highlight.js/lib/languages/diff";
import javascript from "highlight.js/lib/languages/javascript";
import json from "highlight.js/lib/languages/json";
import python from "highlight.js/lib/languages/python";
import rust from "highlight.js/lib/languages/rust";
import sql from "highlight.js/lib/languages/sql";
import typescript from "highlight.js/lib/languages/typescript";
import xml from "highlight.js/lib/languages/xml";
import yaml from "highlight.js/lib/languages/yaml";

const languages = { bash, c, cpp, css, diff, javascript, json, python, rust, sql, typescript, xml, yaml };
for (const [name, fn] of Object.entries(languages)) hljs.registerLanguage(name, fn);

/** Highlighted HTML for `code` in `lang`, or null when the language is not registered. */
export function highlight(code: string, lang: string): string | null {
  const name = lang.trim().toLowerCase();
  if (!name || !hljs.getLanguage(name)) return null;
  return hljs.highlight(code, { language: name, ignoreIllegals: true }).value;
}
