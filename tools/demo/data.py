"""Training sequences for the demo model: the novels as plain text and as conversations
in the XTML chat template the app renders (`tools/tokenizer/xtml_template.jinja`).

A conversation walks through a novel's paragraphs in order: each turn's user message is
either the paragraph before the reply (the model learns to go on with a story) or one of
a few everyday requests, and the assistant's reply is the next paragraph, cut at a
sentence end. Some conversations open with a system message, some ask for thinking (the
think channel holds the paragraph before the reply). Every sequence starts at position 0
of a fresh state, as a conversation does in the app; the engine adds no BOS.

    Tokens(ranks)                     the encoder and the template's control ids
    Batches(tokens, books, t, seed)   .next(b) -> LongTensor [b, t + 1]
    held_out_windows(tokens, paragraphs, t) -> (windows [n, t + 1], UTF-8 bytes they cover)
"""
import random
import re

import torch

import bpe

USER_REQUESTS = [
    "Tell me a story.", "Say something long", "Hello!", "Go on.", "What happened next?",
    "Tell me about the family.", "Who came to visit?", "Write a letter.", "Describe the house.",
    "What did she say?", "Tell me about the ball.", "Please continue.", "Hi, how are you?",
    "Write something.", "What do you think?", "Tell me more.", "Describe the weather.",
    "What did he do then?", "Write a few sentences.", "Tell me about the village.",
]
SYSTEM_PROMPTS = ["You are a helpful assistant.", "You write in the style of an English novel.",
                  "Answer briefly.", "You are a storyteller."]
SENTENCE_END = re.compile(r"[.!?][\"')]?\s")


class Tokens:
    def __init__(self, ranks):
        self.enc = bpe.encoding(ranks)
        sp = self.enc._special_tokens
        self.open, self.close, self.sep, self.eom = (sp[s] for s in ("<|open|>", "<|close|>", "<|sep|>",
                                                                     "<|end_of_msg|>"))

    def text(self, s):
        return self.enc.encode_ordinary(s)

    def element(self, tag, body_ids):
        """<|open|>tag<|sep|> body <|close|>tag-name<|sep|> (the attributes only open it)."""
        name = tag.split(" ")[0]
        return [self.open] + self.text(tag) + [self.sep] + body_ids + [self.close] + self.text(name) + [self.sep]

    def user_turn(self, role, content):
        return [self.open] + self.text(f'message role="{role}"') + [self.sep] + self.text(content) + \
            [self.close] + self.text("message") + [self.sep]

    def assistant_turn(self, content, think=None):
        body = []
        if think is not None:
            body += self.element("think", self.text(think))
        body += self.element("response", self.text(content))
        return [self.open] + self.text('message role="assistant"') + [self.sep] + body + \
            [self.close] + self.text("message") + [self.sep, self.eom]


def cut(text, max_chars, rng):
    """text cut after a sentence end at most max_chars in (whole if it is short)."""
    if len(text) <= max_chars:
        return text
    ends = [m.end() for m in SENTENCE_END.finditer(text) if m.end() <= max_chars]
    return text[: ends[-1]].strip() if ends else text[: max_chars].rsplit(" ", 1)[0]


class Batches:
    def __init__(self, tokens, books, t, seed, chat_share=0.6):
        self.tok, self.t, self.chat_share = tokens, t, chat_share
        self.books = [ps for ps in books.values()]
        self.rng = random.Random(seed)

    def _raw(self):
        ps = self.rng.choice(self.books)
        i = self.rng.randrange(len(ps))
        ids = []
        while len(ids) < self.t + 1:
            ids += self.tok.text(ps[i % len(ps)] + "\n\n")
            i += 1
        return ids

    def _conversation(self):
        r, tok = self.rng, self.tok
        ps = r.choice(self.books)
        i = r.randrange(1, len(ps))
        thinking = r.random() < 0.15
        ids = tok.user_turn("system", r.choice(SYSTEM_PROMPTS)) if r.random() < 0.3 else []
        while len(ids) < self.t + 1:
            prev, reply = ps[(i - 1) % len(ps)], ps[i % len(ps)]
            user = cut(prev, 300, r) if r.random() < 0.6 else r.choice(USER_REQUESTS)
            ids += tok.user_turn("user", user)
            think = cut(prev, 200, r) if thinking else None
            ids += tok.assistant_turn(cut(reply, r.choice([200, 400, 700]), r), think)
            i += 1
        return ids

    def next(self, b):
        rows = [(self._conversation() if self.rng.random() < self.chat_share else self._raw())[: self.t + 1]
                for _ in range(b)]
        return torch.tensor(rows, dtype=torch.long)


def held_out_windows(tokens, paragraphs, t):
    """The held-out novel as plain text cut into windows of t + 1 tokens (each scored from
    a fresh state), and the number of UTF-8 bytes their predicted tokens spell."""
    ids = tokens.text("\n\n".join(paragraphs))
    n = len(ids) // (t + 1)
    windows = torch.tensor(ids[: n * (t + 1)], dtype=torch.long).reshape(n, t + 1)
    predicted_bytes = sum(len(tokens.enc.decode_single_token_bytes(int(i))) for i in windows[:, 1:].reshape(-1))
    return windows, predicted_bytes
