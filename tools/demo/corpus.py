"""The demo model's training text: Jane Austen's six novels, from a Debian package.

Source: Debian 12's `r-cran-janeaustenr` 1.0.0-1 (package MIT, Julia Silge; the novels
themselves are in the public domain, from Project Gutenberg). The package is an R data
package; its texts sit in an R lazy-load database (`data/Rdata.rdb` + `Rdata.rdx`): the
index is gzip'd R serialization naming each object's (offset, length) in the `.rdb`,
and each object there is a 4-byte big-endian length followed by a zlib stream of R
serialization. The PyPI package `rdata` (MIT) parses R serialization; R itself is not
needed. Each novel is a character vector of hard-wrapped lines.

    fetch(work)            -> path of the extracted package (apt-get download + dpkg-deb -x)
    novels(work)           -> {name: [paragraph, ...]} with lines unwrapped, in book order
    split(novels)          -> (train {name: paragraphs}, held-out paragraphs)

The held-out text is all of "Persuasion" (Austen's last finished novel), never seen in
training. Everything is deterministic; the .deb is pinned by sha256.
"""
import gzip
import hashlib
import os
import re
import struct
import subprocess
import zlib

PACKAGE = "r-cran-janeaustenr"
VERSION = "1.0.0-1"
DEB = f"{PACKAGE}_{VERSION}_all.deb"
DEB_SHA256 = "df6bddf211906d1ff404f8ff662c21b34e6660e7f54a311084e749050c019c95"
DATA_DIR = "usr/lib/R/site-library/janeaustenr/data"
BOOKS = ["sensesensibility", "prideprejudice", "mansfieldpark", "emma", "northangerabbey",
         "persuasion"]
HELD_OUT = "persuasion"


def fetch(work):
    """Download the pinned .deb into `work` (once) and extract it; returns the data dir."""
    os.makedirs(work, exist_ok=True)
    deb = os.path.join(work, DEB)
    if not os.path.exists(deb):
        subprocess.run(["apt-get", "download", f"{PACKAGE}={VERSION}"], cwd=work, check=True)
    sha = hashlib.sha256(open(deb, "rb").read()).hexdigest()
    if sha != DEB_SHA256:
        raise SystemExit(f"{deb}: sha256 {sha} != pinned {DEB_SHA256}")
    root = os.path.join(work, "janeaustenr")
    if not os.path.isdir(os.path.join(root, DATA_DIR)):
        subprocess.run(["dpkg-deb", "-x", deb, root], check=True)
    return os.path.join(root, DATA_DIR)


def _lazyload(data_dir):
    """{object name: list of str} from the R lazy-load database."""
    import rdata

    def parse(raw):
        return rdata.conversion.convert(rdata.parser.parse_data(raw))

    index = parse(gzip.decompress(open(os.path.join(data_dir, "Rdata.rdx"), "rb").read()))
    rdb = open(os.path.join(data_dir, "Rdata.rdb"), "rb").read()
    out = {}
    for name, (off, length) in index["variables"].items():
        blob = rdb[int(off): int(off) + int(length)]
        size = struct.unpack(">I", blob[:4])[0]
        raw = zlib.decompress(blob[4:])
        if len(raw) != size:
            raise SystemExit(f"Rdata.rdb: object {name} is {len(raw)} bytes, header says {size}")
        out[str(name)] = [str(s) for s in parse(raw)]
    return out


CHAPTER = re.compile(r"^(chapter|volume)\b", re.IGNORECASE)


def paragraphs(lines):
    """Blank-line separated paragraphs, lines joined by one space, Gutenberg's _italics_
    marks dropped; headings (CHAPTER …, VOLUME …) and all-caps title lines left out."""
    out, cur = [], []
    for line in lines + [""]:
        line = line.strip()
        if line:
            cur.append(line)
            continue
        if cur:
            text = " ".join(cur).replace("_", "")
            text = re.sub(r"\s+", " ", text).strip()
            if not CHAPTER.match(text) and not text.isupper() and len(text) > 1:
                out.append(text)
            cur = []
    return out


def novels(work):
    data = _lazyload(fetch(work))
    missing = [b for b in BOOKS if b not in data]
    if missing:
        raise SystemExit(f"{PACKAGE}: no object {missing} in Rdata.rdb")
    return {b: paragraphs(data[b]) for b in BOOKS}


def split(books):
    train = {b: p for b, p in books.items() if b != HELD_OUT}
    return train, books[HELD_OUT]


if __name__ == "__main__":
    import sys

    work = sys.argv[1] if len(sys.argv) > 1 else "/tmp/k3-demo-work"
    books = novels(work)
    for b, ps in books.items():
        chars = sum(len(p) for p in ps)
        print(f"{b:18s} {len(ps):6d} paragraphs {chars:9d} characters  e.g. {ps[len(ps) // 2][:70]!r}")
