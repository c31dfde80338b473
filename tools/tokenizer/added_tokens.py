"""The 256 added (special) tokens used by the project's test vocabularies.

Index i gets id `base + i`: base 512 for the tiny trained vocabulary (ids 512..767,
matching the tiny checkpoints' vocab_size 768) and base 199998 for the o200k test
vocabulary (ids 199998..200253). The contents mirror what K3-MODEL-SPEC.md section 12.4
knows about the released file ([BOS] first, the XTML markers, a media placeholder);
they are test data, not a claim about the released id assignment.
"""

NAMED = [
    "[BOS]",
    "[EOS]",
    "<|open|>",
    "<|close|>",
    "<|sep|>",
    "<|end_of_msg|>",
    "[PAD]",
    "[UNK]",
    "<|media_placeholder|>",
]

ADDED_TOKENS = NAMED + [f"<|reserved_token_{i}|>" for i in range(len(NAMED), 256)]
assert len(ADDED_TOKENS) == 256 and len(set(ADDED_TOKENS)) == 256

BOS_TOKEN = "[BOS]"
EOS_TOKEN = "<|end_of_msg|>"


def special_tokens(base):
    """{content: id} for tiktoken.Encoding(special_tokens=...)."""
    return {tok: base + i for i, tok in enumerate(ADDED_TOKENS)}


def tokenizer_config(base):
    """tokenizer_config.json contents (dict, key order as in the released files)."""
    decoder = {}
    for i, tok in enumerate(ADDED_TOKENS):
        decoder[str(base + i)] = {
            "content": tok,
            "lstrip": False,
            "normalized": False,
            "rstrip": False,
            "single_word": False,
            "special": True,
        }
    return {
        "added_tokens_decoder": decoder,
        "bos_token": BOS_TOKEN,
        "eos_token": EOS_TOKEN,
        "model_max_length": 1048576,
        "tokenizer_class": "TikTokenTokenizer",
    }
