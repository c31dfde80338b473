"""The Kimi pre-tokenisation pattern (K3-MODEL-SPEC.md section 12.2).

PAT_STR is the eight alternatives joined with "|" in this order, exactly as the
released `tokenization_kimi.py` builds its `pat_str`. It needs `&&` character-class
intersection: tiktoken's Rust core (fancy-regex over the `regex` crate) supports it
natively; the Python `regex` module only with the VERSION1 flag (see `compile_py`).

`fixtures/tokenizer/pattern.txt` holds the same string (one line, no trailing
newline) so the Rust side can check that it pins the identical pattern.
"""

PAT_ALTERNATIVES = [
    r"""[\p{Han}]+""",
    r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}&&[^\p{Han}]]*[\p{Ll}\p{Lm}\p{Lo}\p{M}&&[^\p{Han}]]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
    r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}&&[^\p{Han}]]+[\p{Ll}\p{Lm}\p{Lo}\p{M}&&[^\p{Han}]]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
    r"""\p{N}{1,3}""",
    r""" ?[^\s\p{L}\p{N}]+[\r\n]*""",
    r"""\s*[\r\n]+""",
    r"""\s+(?!\S)""",
    r"""\s+""",
]

PAT_STR = "|".join(PAT_ALTERNATIVES)


def compile_py():
    """Approximate the pattern with the Python `regex` module (VERSION1 enables `&&`).

    Only used to pre-split BPE training text, where exactness does not matter; the
    goldens always come from tiktoken itself.
    """
    import regex

    return regex.compile(PAT_STR, flags=regex.VERSION1)


if __name__ == "__main__":
    print(PAT_STR)
