"""The tokenizer test corpus: (name, text) pairs, written to fixtures/tokenizer/corpus.json.

Deterministic: no randomness, no external input. Invisible or unusual code points are
written as escapes so this file stays readable. `long_mixed_document` (~20 KB) is built
last from the other cases.
"""

CODE_PY = '''import os
from typing import Iterable


class Tokenizer:
    """Byte-level BPE."""

    def __init__(self, ranks: dict[bytes, int]) -> None:
        self.ranks = ranks  # 0..n-1
        self._cache = {}

    def encode(self, text: str) -> list[int]:
        out = []
        for piece in self.split(text):
            if piece in self._cache:
\t\t\t\tout.extend(self._cache[piece])  # tabs, on purpose
            else:
                out.extend(self.bpe(piece.encode("utf-8")))
        return out


if __name__ == "__main__":
    print(Tokenizer({b"a": 0}).encode("aaa"), os.getpid() % 7 == 3)
'''

CODE_RUST = '''use std::collections::HashMap;

/// Rank-based byte pair encoding.
pub fn byte_pair_encode(piece: &[u8], ranks: &HashMap<Vec<u8>, u32>) -> Vec<u32> {
    if let Some(&r) = ranks.get(piece) {
        return vec![r];
    }
    let mut parts: Vec<(usize, u32)> = (0..=piece.len()).map(|i| (i, u32::MAX)).collect();
    'outer: loop {
        let Some((i, _)) = parts.windows(2).enumerate().min_by_key(|(_, w)| w[0].1) else {
            break 'outer;
        };
        parts.remove(i + 1);
    }
    parts.windows(2).map(|w| ranks[&piece[w[0].0..w[1].0]]).collect::<Vec<_>>()
}

#[cfg(test)]
mod tests {
\t#[test]
\tfn it_works() { assert_eq!(2 + 2, 4); }
}
'''

CODE_JSON = '''{
  "model_type": "kimi_k3",
  "vocab_size": 163840,
  "rope_theta": 50000.0,
  "full_attn_layers": [4, 8, 12],
  "nested": {"a": null, "b": true, "c": -1.5e-3, "s": "caf\\u00e9 \\"quoted\\""},
  "empty": {}, "list": []
}'''

CODE_SHELL = '''#!/usr/bin/env bash
set -euo pipefail
for f in fixtures/*/config.json; do
\tjq -r '.vocab_size // .text_config.vocab_size' "$f" | sed 's/^/  /' >> /tmp/out.txt 2>&1 || true
done
if [[ "${1:-}" == "--clean" ]]; then rm -rf ./target && echo "done: $((1 + 2))"; fi
cat <<EOF
  heredoc with $HOME and `date +%Y-%m-%d`
EOF
'''

CASES = [
    # --- ASCII prose -------------------------------------------------------------------
    ("ascii_sentence", "The capital of France is Paris."),
    ("ascii_paragraph",
     "It was the best of times, it was the worst of times, it was the age of wisdom, it was "
     "the age of foolishness; it was the epoch of belief, it was the epoch of incredulity. "
     "Everyone (well, almost everyone) agreed: \"nothing\" -- absolutely nothing -- would change!"),
    ("ascii_leading_space", " leading space and trailing space "),
    ("ascii_capitalised_words", "HTTPServer XMLHttpRequest iPhone McDonald camelCaseWords snake_case_words SCREAMING_CASE"),
    ("ascii_pangram_lines", "The quick brown fox\njumps over\nthe lazy dog.\n"),

    # --- code ----------------------------------------------------------------------------
    ("code_python", CODE_PY),
    ("code_rust", CODE_RUST),
    ("code_json", CODE_JSON),
    ("code_shell", CODE_SHELL),
    ("code_one_liners", "x+=1;y-=2;z**=3 if a!=b else c//d  # ok\nfoo(bar[0], *args, **kw) -> None\n"),

    # --- whitespace ----------------------------------------------------------------------
    ("ws_empty", ""),
    ("ws_single_space", " "),
    ("ws_lone_cr", "\r"),
    ("ws_lone_lf", "\n"),
    ("ws_two_spaces_word", "  word"),
    ("ws_spaces_300", " " * 300),
    ("ws_spaces_300_then_word", " " * 300 + "word"),
    ("ws_tabs", "\tone\t\ttwo\t\t\tthree\t"),
    ("ws_crlf_lines", "line one\r\nline two\r\n\r\nline four\r\n"),
    ("ws_triple_newline", "para one\n\n\npara two\n\n\n"),
    ("ws_trailing_spaces_before_newline", "trailing   \nspaces\t \nhere  \r\n  indented\n"),
    ("ws_mixed_runs", " \t \n \r\n\t\t \n\n  x  \t  y \n"),
    ("ws_only_newlines_and_spaces", "\n \n  \n   \n"),
    ("ws_cr_only_lines", "a\rb\r\rc\r"),

    # --- digits --------------------------------------------------------------------------
    ("digits_basic", "1 12 123 1234 12345 123456 1234567"),
    ("digits_glued", "1234567"),
    ("digits_decimals", "3.14159 -0.5 +2.5e-10 1,000,000 0x1F 0b1011 1_000_000 99.9%"),
    ("digits_letters_glued", "abc123def 4567xyz GPT4o v1.2.3 2nd 3rd 100km/h H2O"),
    ("digits_dates_times", "2024-01-15T13:45:30Z, 15/01/2024 at 1:05pm, (555) 123-4567"),
    ("digits_non_ascii", "\u0661\u0662\u0663\u0664 \u0966\u0967\u0968 \uff11\uff12\uff13\uff14 \u2460\u2461 \u00bd \u2167"),

    # --- contractions --------------------------------------------------------------------
    ("contractions_lower", "I'm sure you're right, they've said it's fine, we'll see, I'd go, don't worry."),
    ("contractions_upper_mixed", "DON'T STOP, we'LL go, She'S here, THEY'RE late, I'M ok, You'Ve won, He'D know"),
    ("contractions_edge", "'s 's' ''s o'clock rock'n'roll ma'am y'all'd've 'tis"),

    # --- accents -------------------------------------------------------------------------
    ("accents_precomposed", "caf\u00e9 na\u00efve r\u00e9sum\u00e9 \u00fcber Stra\u00dfe fa\u00e7ade \u00c9COLE \u00d8resund"),
    ("accents_combining", "cafe\u0301 nai\u0308ve E\u0301COLE a\u030a n\u0303 \u0301lone combining"),
    ("vietnamese", "Ti\u1ebfng Vi\u1ec7t l\u00e0 ng\u00f4n ng\u1eef c\u1ee7a ng\u01b0\u1eddi Vi\u1ec7t. \u0110\u1eb9p qu\u00e1! T\u00f4i y\u00eau H\u00e0 N\u1ed9i."),

    # --- CJK -----------------------------------------------------------------------------
    ("chinese", "\u4eca\u5929\u5929\u6c14\u5f88\u597d\uff0c\u6211\u4eec\u53bb\u516c\u56ed\u6563\u6b65\u5427\u3002\u4eba\u5de5\u667a\u80fd\u6b63\u5728\u6539\u53d8\u4e16\u754c\uff01"),
    ("japanese_mixed", "\u79c1\u306f\u6771\u4eac\u306b\u4f4f\u3093\u3067\u3044\u307e\u3059\u3002\u30b3\u30f3\u30d4\u30e5\u30fc\u30bf\u30fc\u3092\u4f7f\u3063\u3066\u3001\u65e5\u672c\u8a9e\u3092\u52c9\u5f37\u3057\u3066\u3044\u307e\u3059\u3002"),
    ("hiragana", "\u3072\u3089\u304c\u306a\u3060\u3051\u306e\u3076\u3093\u3057\u3087\u3046\u3067\u3059\u306d\u3002\u3042\u3044\u3046\u3048\u304a"),
    ("katakana", "\u30ab\u30bf\u30ab\u30ca\u30fc\u30c6\u30b9\u30c8 \u30a2\u30a4\u30b9\u30af\u30ea\u30fc\u30e0 \uff76\uff80\uff76\uff85"),
    ("hangul", "\uc548\ub155\ud558\uc138\uc694. \ud55c\uad6d\uc5b4\ub294 \uc544\ub984\ub2f5\uc2b5\ub2c8\ub2e4! \u1100\u1161\u11a8 (conjoining jamo)"),
    ("han_latin_digits", "\u6211\u67093\u4e2aiPhone15\u548c2\u53f0MacBook Pro\uff0c\u4ef7\u683c\u662f12999\u5143RMB\u3002GPT-4\u6a21\u578b\u5f88\u5f3a"),
    ("han_iteration_marks", "\u4eba\u3005\u3068\u6642\u3005 \u3007\u3007\u4e03 \u3021\u3022 \u2e80\u2f00 \u4e00\u4e8c\u4e09"),
    ("han_extensions_b_to_h", "\U00020000\U0002a700\U0002b740\U0002b820\U0002ceb0\U00030000\U00031350 x\U00020000y"),
    ("han_extension_i_unicode_15_1", "\U0002ebf0\U0002ebf1\u4e00 a\U0002ebf0b"),
    ("unicode_16_letters", "x\u1c89\u1c89a \U00011380\U00011380 tje\u1c8a \u1c89\u1c89\u1c89"),
    ("cjk_compat_and_radicals", "\uf900\uf901 \U0002f800 \u2e81\u2f08 \u31c0\u31c1 \u3190\u3191 \u32a4"),

    # --- emoji ---------------------------------------------------------------------------
    ("emoji_simple", "I \u2764\ufe0f Rust \U0001f980 and Python \U0001f40d! \U0001f600\U0001f603\U0001f604"),
    ("emoji_zwj_family", "family: \U0001f468\u200d\U0001f469\u200d\U0001f467\u200d\U0001f466 and \U0001f469\u200d\U0001f4bb coder"),
    ("emoji_skin_tones", "\U0001f44d\U0001f3fd \U0001f44b\U0001f3fb\U0001f44b\U0001f3ff thumbs\U0001f44d\U0001f3fc"),
    ("emoji_flags", "\U0001f1eb\U0001f1f7\U0001f1ef\U0001f1f5\U0001f1fa\U0001f1f8 flags \U0001f3f4\U000e0067\U000e0062\U000e0073\U000e0063\U000e0074\U000e007f"),
    ("emoji_keycaps", "1\ufe0f\u20e3 2\ufe0f\u20e3 #\ufe0f\u20e3 *\ufe0f\u20e3 keycap10\U0001f51f"),
    ("emoji_only_run", "\U0001f525\U0001f525\U0001f525\U0001f4af\U0001f680\U0001f680"),

    # --- RTL -----------------------------------------------------------------------------
    ("arabic", "\u0645\u0631\u062d\u0628\u0627 \u0628\u0627\u0644\u0639\u0627\u0644\u0645! \u0627\u0644\u0639\u062f\u062f 42 \u0648\u0627\u0644\u0639\u062f\u062f \u0664\u0662 \u0641\u064a \u0633\u0646\u0629 2024."),
    ("arabic_diacritics", "\u0628\u0650\u0633\u0652\u0645\u0650 \u0627\u0644\u0644\u0651\u064e\u0647\u0650 \u0627\u0644\u0631\u0651\u064e\u062d\u0652\u0645\u064e\u0670\u0646\u0650"),
    ("hebrew", "\u05e9\u05dc\u05d5\u05dd \u05e2\u05d5\u05dc\u05dd! \u05de\u05d7\u05d9\u05e8: 199.90 \u20aa, \u05d8\u05dc\u05e4\u05d5\u05df 03-1234567"),
    ("rtl_with_marks", "\u200f\u05e2\u05d1\u05e8\u05d9\u05ea\u200e English \u202b\u0639\u0631\u0628\u064a\u202c end"),

    # --- other scripts -------------------------------------------------------------------
    ("cyrillic", "\u041f\u0440\u0438\u0432\u0435\u0442, \u043c\u0438\u0440! \u042d\u0442\u043e \u0442\u0435\u0441\u0442\u043e\u0432\u0430\u044f \u0441\u0442\u0440\u043e\u043a\u0430. \u0401\u041b\u041a\u0418-\u041f\u0410\u041b\u041a\u0418 \u0451\u0436"),
    ("greek", "\u0393\u03b5\u03b9\u03ac \u03c3\u03bf\u03c5 \u039a\u03cc\u03c3\u03bc\u03b5! \u0391\u0392\u0393\u0394 \u03b1\u03b2\u03b3\u03b4 \u1f08\u03b8\u1fc6\u03bd\u03b1\u03b9 \u03c0\u2248 3.14"),
    ("devanagari", "\u0928\u092e\u0938\u094d\u0924\u0947 \u0926\u0941\u0928\u093f\u092f\u093e! \u0939\u093f\u0928\u094d\u0926\u0940 \u092d\u093e\u0937\u093e \u0967\u0968\u0969 \u0915\u094d\u0937\u0924\u094d\u0930\u093f\u092f\u0964"),
    ("thai", "\u0e2a\u0e27\u0e31\u0e2a\u0e14\u0e35\u0e04\u0e23\u0e31\u0e1a \u0e20\u0e32\u0e29\u0e32\u0e44\u0e17\u0e22\u0e44\u0e21\u0e48\u0e21\u0e35\u0e0a\u0e48\u0e2d\u0e07\u0e27\u0e48\u0e32\u0e07 \u0e51\u0e52\u0e53"),
    ("mixed_scripts_one_line", "English \u0420\u0443\u0441\u0441\u043a\u0438\u0439 \u4e2d\u6587 \u65e5\u672c\u8a9e \ud55c\uad6d\uc5b4 \u0627\u0644\u0639\u0631\u0628\u064a\u0629 \u05e2\u05d1\u05e8\u05d9\u05ea \u0939\u093f\u0928\u094d\u0926\u0940 \u0e44\u0e17\u0e22 \u0395\u03bb\u03bb\u03b7\u03bd\u03b9\u03ba\u03ac \U0001f30d 123"),
    ("mixed_scripts_glued", "abc\u0430\u0431\u0432\u4e2d\u6587def\u3042\u3044\u0627\u0628\u05d0\u05d1\u03b1\u03b2123\u4e2d"),

    # --- punctuation, URLs, markdown -----------------------------------------------------
    ("punct_runs", "Wait... what?!?! -- no --- (((nested))) [[x]] {{y}} <<<>>> ***bold*** ___ ~~~ ``` !!! ??? ;;; ::"),
    ("punct_with_newlines", "end.\n\n---\n***\r\n...\n\n"),
    ("url_and_email", "See https://example.com/path/to/page?query=1&b=two#frag or mailto:someone@example.org, ftp://x.y/z"),
    ("markdown",
     "# Title\n\n## Sub-title\n\n- item **bold** and _italic_\n- `inline code` and [link](https://x.io)\n"
     "1. first\n2. second\n\n> quote\n\n| a | b |\n|---|---:|\n| 1 | 2 |\n\n```rust\nfn main() {}\n```\n"),
    ("unicode_punctuation", "\u201cSmart quotes\u201d \u2018single\u2019 \u2014 em dash \u2013 en dash \u2026 \u00ab\u00a0guillemets\u00a0\u00bb \u300c\u62ec\u5f27\u300d\u3010\u3011\uff08\uff09\u3002\uff0c"),
    ("math_symbols", "\u2200x\u2208\u211d: x\u00b2 \u2265 0 \u2227 \u2211\u1d62 a\u1d62 \u2264 \u221e; \u03bb\u2192\u03bc \u00d7 \u00f7 \u00b1 \u2260"),

    # --- unusual but valid code points ---------------------------------------------------
    ("replacement_char", "bad \ufffd byte \ufffd\ufffd here"),
    ("zero_width_space", "zero\u200bwidth\u200b \u200bspace\u200c\u200d joiner\ufeffbom"),
    ("nbsp", "100\u00a0km and\u00a0\u00a0two nbsp\u00a0 \u00a0mixed\u202fnarrow"),
    ("ideographic_space", "\u4e2d\u3000\u6587\u3000\u3000\u7a7a\u683c x\u3000y\u3000"),
    ("control_and_unicode_whitespace",
     "a\x0bb\x0cc\x1cd\x1de\x1ef\x1fg\x85h\u2028i\u2029j\u1680k\u2000l\u200am\u205fn\x00o\x7fp"),
    ("unicode_whitespace_between_digits",
     "1 \x1c2 3 \x0b4 5 \x0c6 7 \x858 9 \u20280 1 \u20292 3 \u30004 5 \x1f6 7 \u200b8 9 \ufeff0 "
     "1 \u180e2 3 \u16803 4 \u200a5 6 \u202f7 8 \u205f9 0 \u00a01 2 \x1c\x1c\n3"),
    ("private_use_and_noncharacters", "\ue000\uf8ff \U000f0000 \ufdd0\ufffe \U0010fffd x"),
    ("long_s_and_special_case", "\u017f's Stra\u00dfe \u0130stanbul \u0131 \ufb01le \u1e9e"),

    # --- added tokens in text ------------------------------------------------------------
    ("added_xtml_message", 'Hi<|open|>message role="user"<|sep|>hello<|close|>message<|sep|>'),
    ("added_bos_eos", "[BOS]text[EOS]"),
    ("added_prefix_only", "<|open and <|open| and <|close|x and [BOS and BOS] and <|reserved_token_9|"),
    ("added_back_to_back", "<|open|><|sep|><|close|>[BOS][EOS]<|end_of_msg|>"),
    ("added_spaces_around", "a  <|open|>  b \n<|sep|>\n\n c"),
    ("added_reserved_tokens", "<|reserved_token_9|><|reserved_token_99|><|reserved_token_255|><|reserved_token_256|><|reserved_token_8|>"),
    ("added_nested_lookalike", "<|<|open|>|> [[BOS]] <|open|>|>"),
    ("added_chat_prefix",
     '<|open|>message role="system"<|sep|>You are helpful.<|close|>message<|sep|>'
     '<|open|>message role="user"<|sep|>\u4f60\u597d\uff01What is 2+2?<|close|>message<|sep|>'
     '<|open|>think<|sep|>'),
    ("added_media_and_pad", "<|media_placeholder|>describe this [PAD][PAD][UNK]<|end_of_msg|>"),
]


def long_document(cases, target_bytes=20480):
    """~20 KB mixed document: the other cases in a fixed interleaved order, cut at a
    character boundary just below target_bytes."""
    texts = [t for _, t in cases if t]
    parts, size, k = [], 0, 0
    while size < target_bytes + 4096:
        # step by 7 (coprime with the case count) so neighbours differ between rounds
        t = texts[(k * 7) % len(texts)]
        sep = ["\n\n", "\n", " ", "\r\n", "\t"][k % 5]
        parts.append(t + sep)
        size += len((t + sep).encode("utf-8"))
        k += 1
    doc = "".join(parts).encode("utf-8")[:target_bytes]
    return doc.decode("utf-8", errors="ignore")  # drops a cut trailing character only


def all_cases():
    cases = list(CASES)
    cases.append(("long_mixed_document", long_document(CASES)))
    names = [n for n, _ in cases]
    assert len(names) == len(set(names)), "duplicate case names"
    return cases
