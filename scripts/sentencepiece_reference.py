#!/usr/bin/env python3
"""Reference data of the native SentencePiece tokenizer (docs/models.md, "The UMT5 tokenizer").

  python3 scripts/sentencepiece_reference.py --out DIR [--threads N] [--strings N]

Needs the `sentencepiece` package (the GPU machine's Python has 0.2.2; Debian's
python3-sentencepiece is 0.1.97); `transformers` is optional. Everything is seeded: the same
package versions write the same files.

1. Trains the Unigram models of MODELS with sentencepiece on a synthetic corpus of several
   scripts (Latin with diacritics, Cyrillic, Greek, Arabic, Hebrew, Devanagari, Thai, Hangul,
   CJK, kana, digits, punctuation, emoji).
2. Generates the test strings: in-corpus sentences, random code points of many Unicode blocks,
   combining marks, control characters, long whitespace runs of every kind, empty strings and
   single characters, emoji sequences, code-like text, malformed UTF-8 bytes, and strings of
   100 KB.
3. Encodes every string with every model (SentencePieceProcessor.encode, ids) and writes what
   tests/models/text/sentencepiece_reference_test.cpp reads:
     DIR/strings.bin             the strings
     DIR/<model>.model           the serialized models
     DIR/<model>.ids             the ids of every string
     DIR/<model>.tokenizer.json  where transformers is installed, its conversion of the model
                                 (models whose settings the conversion keeps), without indentation
     DIR/README.md               what was generated, with which versions, and how often
                                 transformers' own tokenizer disagrees with sentencepiece
   Formats (unsigned LEB128 varints): strings.bin is the count, then per string its byte
   length and bytes; <model>.ids is the count, then per string its id count and ids.
"""
import argparse
import hashlib
import io
import json
import os
import random
import sys
import tempfile
import time

import sentencepiece as spm

SEED = 20261203

# name: (vocabulary size, normalization rule, byte fallback, further trainer options); the small
# models learn from part of the corpus (TRAINING_SCRIPTS), so that their characters fit.
T5_IDS = dict(pad_id=0, eos_id=1, unk_id=2, bos_id=-1)
MODELS = {
    "unigram1k_identity": (1000, "identity", False, dict(character_coverage=0.98, **T5_IDS)),
    "unigram4k_nfkc_symbols_bytes": (4000, "nmt_nfkc", True, dict(
        user_defined_symbols=["<sep>", "@@", "\u2603\u2603", "http://"], control_symbols=["<ctrl>"])),
    "unigram16k_identity_bytes_raw": (16000, "identity", True, dict(
        add_dummy_prefix=False, remove_extra_whitespaces=False, **T5_IDS)),
    "unigram32k_nfkc": (32000, "nmt_nfkc", False, T5_IDS),
}
TRAINING_SCRIPTS = {
    "unigram1k_identity": ["latin", "cyrillic", "greek"],
    "unigram4k_nfkc_symbols_bytes": ["latin", "cyrillic", "greek", "arabic", "hebrew", "devanagari", "thai",
                                     "kana"],
}
# Models whose settings transformers' conversion keeps: it writes the whitespace folding and the
# prefix whatever the model says, and (for T5) no byte fallback.
TOKENIZER_JSON_MODELS = ["unigram1k_identity", "unigram32k_nfkc"]


def chars(a, b):
    return [chr(c) for c in range(a, b + 1)]


SCRIPTS = {
    "latin": (chars(0x61, 0x7A) * 4 + list("àáâäãåæçèéêëìíîïñòóôöõøœßùúûüýÿ"), True),
    "cyrillic": (chars(0x430, 0x44F) + ["ё"], True),
    "greek": (chars(0x3B1, 0x3C9) + list("άέήίόύώ"), True),
    "arabic": (chars(0x627, 0x64A), True),
    "hebrew": (chars(0x5D0, 0x5EA), True),
    "devanagari": (chars(0x915, 0x939) + chars(0x93E, 0x94D), True),
    "thai": (chars(0xE01, 0xE2E) + chars(0xE30, 0xE39) + chars(0xE48, 0xE4B), False),
    "hangul": (None, True),  # random syllables
    "cjk": (None, False),    # a fixed subset of common ideographs
    "kana": (chars(0x3041, 0x3096) + chars(0x30A1, 0x30FA), False),
}
PUNCT = list(".,;:!?-()\"'«»„“”‘’…—/%&+=#@*[]{}")
EMOJI = chars(0x1F600, 0x1F64F) + chars(0x1F300, 0x1F3FF)[:120] + chars(0x1F680, 0x1F6C5)


class Language:
    """Words of one script with Zipf-like frequencies, so that training finds multi-char pieces."""

    def __init__(self, rng, script):
        self.script = script
        alphabet, spaced = SCRIPTS[script]
        if script == "hangul":
            alphabet = [chr(rng.randint(0xAC00, 0xD7A3)) for _ in range(400)]
        if script == "cjk":
            alphabet = [chr(rng.randint(0x4E00, 0x9FFF)) for _ in range(1500)]
        self.spaced = spaced
        syllables = ["".join(rng.choice(alphabet) for _ in range(rng.randint(1, 3)))
                     for _ in range(300)]
        self.words = ["".join(rng.choice(syllables) for _ in range(rng.randint(1, 4)))
                      for _ in range(3000)]
        self.weights = [1.0 / (i + 1) for i in range(len(self.words))]

    def sentence(self, rng):
        words = rng.choices(self.words, weights=self.weights, k=rng.randint(3, 14))
        if rng.random() < 0.2:
            words.insert(rng.randrange(len(words) + 1), str(rng.randint(0, 10 ** rng.randint(1, 6))))
        if rng.random() < 0.1:
            words.insert(rng.randrange(len(words) + 1), rng.choice(EMOJI))
        text = (" " if self.spaced else "").join(words)
        if rng.random() < 0.3 and text[:1].isalpha():
            text = text[:1].upper() + text[1:]
        return text + rng.choice(PUNCT[:6])


def corpus(rng, languages, n):
    """(script, sentence) pairs."""
    out = []
    for _ in range(n):
        language = rng.choice(languages)
        out.append((language.script, language.sentence(rng)))
    return out


def train(name, sentences, threads):
    vocab, rule, byte_fallback, extra = MODELS[name]
    if name in TRAINING_SCRIPTS:
        sentences = [text for script, text in sentences if script in TRAINING_SCRIPTS[name]]
    else:
        sentences = [text for _, text in sentences]
    out = io.BytesIO()
    spm.SentencePieceTrainer.train(
        sentence_iterator=iter(sentences), model_writer=out, model_type="unigram",
        vocab_size=vocab, normalization_rule_name=rule, byte_fallback=byte_fallback,
        hard_vocab_limit=False, num_threads=threads, input_sentence_size=len(sentences),
        shuffle_input_sentence=False, max_sentencepiece_length=16, minloglevel=2,
        **{"character_coverage": 0.9995, **extra})
    return out.getvalue()


# ---- the test strings

BLOCKS = [
    (0x20, 0x7E), (0xA0, 0xFF), (0x100, 0x24F), (0x250, 0x2AF), (0x370, 0x3FF), (0x400, 0x4FF),
    (0x530, 0x58F), (0x5D0, 0x5EA), (0x600, 0x6FF), (0x900, 0x97F), (0xE00, 0xE7F), (0x10A0, 0x10FF),
    (0x1200, 0x137F), (0x13A0, 0x13F5), (0x1800, 0x18AA), (0x0F00, 0x0FD4), (0x1E00, 0x1EFF),
    (0x2000, 0x206F), (0x2070, 0x209C), (0x20A0, 0x20C0), (0x2100, 0x214F), (0x2150, 0x218B),
    (0x2190, 0x21FF), (0x2200, 0x22FF), (0x2460, 0x24FF), (0x2500, 0x257F), (0x2600, 0x26FF),
    (0x3000, 0x303F), (0x3040, 0x30FF), (0x3130, 0x318F), (0x3200, 0x32FF), (0x3300, 0x33FF),
    (0x4E00, 0x9FFF), (0xAC00, 0xD7A3), (0xE000, 0xE0FF), (0xF900, 0xFAFF), (0xFB00, 0xFB4F),
    (0xFB50, 0xFDFF), (0xFE10, 0xFE6F), (0xFE70, 0xFEFF), (0xFF00, 0xFFEF), (0xFFF0, 0xFFFF),
    (0x10000, 0x100FA), (0x1D400, 0x1D7FF), (0x1F000, 0x1FAFF), (0x20000, 0x2A6DF), (0xE0000, 0xE007F),
    (0xF0000, 0xF00FF),
]
COMBINING = chars(0x300, 0x36F) + chars(0x1AB0, 0x1ACE) + chars(0x1DC0, 0x1DFF) + chars(0x20D0, 0x20F0) \
    + chars(0xFE20, 0xFE2F) + ["\u093C", "\u0901", "\u0902", "\u3099", "\u309A"]
CONTROLS = chars(0x0, 0x1F) + ["\x7f"] + chars(0x80, 0x9F) + chars(0x200B, 0x200F) + \
    ["\u2028", "\u2029"] + chars(0x202A, 0x202E) + chars(0x2060, 0x2064) + ["\ufeff"] + chars(0xFFF9, 0xFFFB)
SPACES = [" "] * 8 + ["\t", "\n", "\r", "\x0b", "\x0c", "\u00a0", "\u1680", "\u202f", "\u205f", "\u3000",
                      "\u2581", "\u0085"] + chars(0x2000, 0x200A)


def random_char(rng):
    a, b = rng.choice(BLOCKS)
    return chr(rng.randint(a, b))


def emoji_sequence(rng):
    kind = rng.randrange(5)
    if kind == 0:  # a ZWJ family
        return "\u200d".join(rng.choice(["👨", "👩", "👧", "👦", "❤\ufe0f", "💋"]) for _ in range(rng.randint(2, 4)))
    if kind == 1:  # skin tones
        return rng.choice(["👋", "👍", "🧑", "🙌", "✋"]) + chr(rng.randint(0x1F3FB, 0x1F3FF))
    if kind == 2:  # a flag
        return chr(rng.randint(0x1F1E6, 0x1F1FF)) + chr(rng.randint(0x1F1E6, 0x1F1FF))
    if kind == 3:  # a keycap
        return rng.choice("0123456789#*") + "\ufe0f\u20e3"
    return "🏴" + "".join(chr(0xE0061 + rng.randrange(26)) for _ in range(rng.randint(2, 5))) + "\U000E007F"


def malformed_bytes(rng):
    kind = rng.randrange(7)
    if kind == 0:
        return bytes(rng.randrange(256) for _ in range(rng.randint(1, 30)))
    pieces = {
        1: [b"\xc3", b"\xe2\x82", b"\xf0\x9f\x98"],          # truncated sequences
        2: [b"\xc0\x80", b"\xc1\xbf", b"\xe0\x80\x80", b"\xf0\x80\x80\x80"],  # overlong
        3: [b"\xed\xa0\x80", b"\xed\xbf\xbf"],                # surrogates
        4: [b"\xf4\x90\x80\x80", b"\xf7\xbf\xbf\xbf", b"\xf8\x88\x80\x80\x80"],  # past U+10FFFF
        5: [b"\x80", b"\xbf", b"\xfe", b"\xff"],              # lone bytes
        6: [b"\xef\xbf\xbd"],                                 # a real U+FFFD
    }[kind]
    out = b""
    for _ in range(rng.randint(1, 4)):
        out += rng.choice([b"word ", b"caf\xc3\xa9 ", b"", b" ", "狐".encode()]) + rng.choice(pieces)
    return out


def test_strings(rng, languages, n):
    """(category, bytes) pairs: n in all, then two strings of 100 KB."""
    shares = [("corpus", 0.25), ("codepoints", 0.20), ("combining", 0.10), ("controls", 0.10),
              ("whitespace", 0.10), ("short", 0.05), ("emoji", 0.08), ("code", 0.07), ("malformed", 0.05)]
    out = []
    for category, share in shares:
        for i in range(int(n * share)):
            if category == "corpus":
                s = rng.choice(languages).sentence(rng)
            elif category == "codepoints":
                s = "".join(random_char(rng) if rng.random() < 0.85 else " " for _ in range(rng.randint(1, 24)))
            elif category == "combining":
                s = " ".join(rng.choice("aeiouAEOnсиαהक") + "".join(rng.choice(COMBINING) for _ in range(rng.randint(1, 5)))
                             for _ in range(rng.randint(1, 6)))
                if rng.random() < 0.3:  # decomposed Hangul jamo
                    s += "".join(chr(rng.randint(0x1100, 0x1112)) + chr(rng.randint(0x1161, 0x1175)) +
                                 (chr(rng.randint(0x11A8, 0x11C2)) if rng.random() < 0.5 else "")
                                 for _ in range(rng.randint(1, 4)))
            elif category == "controls":
                words = rng.choice(languages).sentence(rng).split(" ")
                s = "".join(w + "".join(rng.choice(CONTROLS) for _ in range(rng.randint(0, 3))) for w in words)
            elif category == "whitespace":
                words = rng.choice(languages).sentence(rng).split(" ")[: rng.randint(0, 5)]
                run = lambda: "".join(rng.choice(SPACES) for _ in range(rng.choice([1, 1, 2, 2, 3, 5, 10, 40] + [300] * (i % 20 == 0))))
                s = run() + run().join(words) + (run() if rng.random() < 0.7 else "")
            elif category == "short":
                s = "" if i % 5 == 0 else (random_char(rng) if i % 2 else rng.choice(SPACES + CONTROLS + COMBINING))
            elif category == "emoji":
                s = " ".join(emoji_sequence(rng) if rng.random() < 0.6 else rng.choice(languages).sentence(rng)[:12]
                             for _ in range(rng.randint(1, 5)))
            elif category == "code":
                s = rng.choice([
                    lambda: "https://example.com/%s?q=%d&x=%s" % ("".join(rng.choice("abc/._-") for _ in range(12)),
                                                                   rng.randint(0, 10 ** 9), rng.choice(["ä", "%20", "€"])),
                    lambda: rng.choice("aé狐-=_.") * rng.randint(2, 80),
                    lambda: "{:,}".format(rng.randint(0, 10 ** 12)) + " " + "{:.6f}".format(rng.random()),
                    lambda: "".join(rng.choice(PUNCT) for _ in range(rng.randint(1, 30))),
                    lambda: "".join(rng.choice("AbCdÉfĞ") for _ in range(rng.randint(1, 20))),
                ])()
            if category == "malformed":
                out.append((category, malformed_bytes(rng)))
            else:
                out.append((category, s.encode("utf-8")))
    pool = [b for c, b in out if c in ("corpus", "codepoints", "combining", "whitespace", "emoji")]
    for _ in range(2):
        big = b""
        while len(big) < 100 * 1024:
            big += rng.choice(pool) + b" "
        out.append(("100KB", big))
    return out


def varint(n):
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        out.append(b | (0x80 if n else 0))
        if not n:
            return bytes(out)


def hf_tokenizer(model_bytes):
    """transformers' T5 tokenizer of the model as `from_pretrained` builds it from a folder holding
    only spiece.model (what diffusers' Wan pipeline does): (its tokenizer.json text, a function
    encoding text to ids), or (None, why)."""
    try:
        import transformers
        from transformers import AutoTokenizer
    except Exception as e:  # noqa: BLE001
        return None, "transformers unavailable: %s" % e
    with tempfile.TemporaryDirectory() as d:
        with open(os.path.join(d, "spiece.model"), "wb") as f:
            f.write(model_bytes)
        with open(os.path.join(d, "tokenizer_config.json"), "w") as f:
            json.dump({"tokenizer_class": "T5Tokenizer", "extra_ids": 0}, f)
        try:
            tok = AutoTokenizer.from_pretrained(d)
            tok.save_pretrained(os.path.join(d, "out"))
            # The same JSON value, without the indentation (a third of the file's size).
            text = json.dumps(json.load(open(os.path.join(d, "out", "tokenizer.json"), encoding="utf-8")),
                              ensure_ascii=False, separators=(",", ":"))
        except Exception as e:  # noqa: BLE001
            return None, "transformers %s could not convert: %s" % (transformers.__version__, e)
    vocab = len(json.loads(text)["model"]["vocab"])
    return text, (vocab, lambda s: tok(s, add_special_tokens=False).input_ids)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True)
    ap.add_argument("--threads", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--strings", type=int, default=10000)
    ap.add_argument("--corpus", type=int, default=60000, help="training sentences")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    rng = random.Random(SEED)
    languages = [Language(rng, s) for s in sorted(SCRIPTS)]
    sentences = corpus(rng, languages, args.corpus)
    strings = test_strings(random.Random(SEED + 1), languages, args.strings)
    with open(os.path.join(args.out, "strings.bin"), "wb") as f:
        f.write(varint(len(strings)))
        for _, b in strings:
            f.write(varint(len(b)) + b)
    lines = ["# SentencePiece reference data", "",
             "Written by `scripts/sentencepiece_reference.py` (docs/models.md, \"The UMT5 tokenizer\"); read by",
             "`tests/models/text/sentencepiece_reference_test.cpp`. sentencepiece %s, Python %s."
             % (spm.__version__, sys.version.split()[0]), "",
             "%d strings (`strings.bin`): %s." % (len(strings), ", ".join(
                 "%s %d" % (c, sum(1 for k, _ in strings if k == c)) for c in dict.fromkeys(k for k, _ in strings))),
             "", "| model | vocabulary | normalization | byte fallback | other options | pieces | seconds to train | tokenizer.json |",
             "|---|---|---|---|---|---|---|---|"]
    notes = []
    for name in MODELS:
        t0 = time.time()
        model = train(name, sentences, args.threads)
        seconds = time.time() - t0
        with open(os.path.join(args.out, name + ".model"), "wb") as f:
            f.write(model)
        sp = spm.SentencePieceProcessor(model_proto=model)
        t0 = time.time()
        ids = [sp.encode(b.decode("utf-8") if c != "malformed" else b) for c, b in strings]
        encode_seconds = time.time() - t0
        with open(os.path.join(args.out, name + ".ids"), "wb") as f:
            f.write(varint(len(ids)))
            for row in ids:
                f.write(varint(len(row)) + b"".join(varint(i) for i in row))
        json_note = "-"
        text, hf = hf_tokenizer(model)
        if text is None:
            notes.append("%s: %s" % (name, hf))
        else:
            vocab_size, encode = hf
            if name in TOKENIZER_JSON_MODELS:
                with open(os.path.join(args.out, name + ".tokenizer.json"), "w", encoding="utf-8") as f:
                    f.write(text)
                json_note = "written"
            differ = {}
            valid = [(c, b, want) for (c, b), want in zip(strings, ids) if c != "malformed"]
            for c, b, want in valid:
                if encode(b.decode("utf-8")) != want:
                    differ[c] = differ.get(c, 0) + 1
            notes.append("%s: transformers' T5 tokenizer from spiece.model (%d pieces) gives other ids than "
                         "sentencepiece for %d of %d valid strings (%s)" % (
                             name, vocab_size, sum(differ.values()), len(valid),
                             ", ".join("%s %d" % kv for kv in differ.items()) or "none"))
        vocab, rule, bf, extra = MODELS[name]
        other = ", ".join("%s=%s" % (k, v) for k, v in extra.items() if k not in T5_IDS) or "-"
        other = other.replace("|", "\\|")
        lines.append("| `%s` | %d | %s | %s | %s | %d | %.1f | %s |" % (name, vocab, rule, "yes" if bf else "no", other,
                                                                       sp.get_piece_size(), seconds, json_note))
        print("%s: %d pieces, trained in %.1f s, %d strings encoded in %.2f s (%d ids)" % (
            name, sp.get_piece_size(), seconds, len(strings), encode_seconds, sum(map(len, ids))), flush=True)
    lines += ["", "Models with T5's special ids have <pad> 0, </s> 1, <unk> 2 and no <s>; the others SentencePiece's",
              "defaults (<unk> 0, <s> 1, </s> 2).", ""] + ["- " + n for n in notes] + ["", "SHA-256:", ""]
    for fname in sorted(os.listdir(args.out)):
        if fname == "README.md":
            continue
        digest = hashlib.sha256(open(os.path.join(args.out, fname), "rb").read()).hexdigest()
        lines.append("- `%s` %s (%d bytes)" % (fname, digest, os.path.getsize(os.path.join(args.out, fname))))
    with open(os.path.join(args.out, "README.md"), "w", encoding="utf-8") as f:
        f.write("\n".join(lines) + "\n")
    print("\n".join(notes))


if __name__ == "__main__":
    main()
