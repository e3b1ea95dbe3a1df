"""Text as a reader sees it, before any claim is read out of it (both layers of the checks).

``fold(text)`` is what the pattern floor and the model layer read, and what tool strings and
questions are compared in:

- escape sequences (CSI, OSC, two-character) are removed: a terminal shows nothing of them; so
  are the other controls (C0 and C1 but tab and the line breaks, DEL, a carriage return inside a
  word: "re\\x00fund" is "refund");
- HTML a rich-text editor leaves: a tag or comment is removed ("re<b></b>fund"), an entity with
  its semicolon is its character ("re&shy;fund", "&#8203;"; "AT&T" stays);
- NFKC: full-width letters and digits, ligatures, compatibility spaces (NBSP) and the like;
- format characters (category Cf: soft hyphens, zero-width spaces and joiners, bidirectional
  controls, the BOM) and the blank "letters" (Hangul fillers, the braille blank, variation
  selectors, the combining grapheme joiner) are removed: "re\\u00adfund" is "refund";
- lookalike letters of the Cyrillic and Greek scripts are folded to the Latin letter they pass
  for ("r\\u0435fund" with a Cyrillic ie is "refund") -- only inside a word that also holds a
  Latin letter, so a Russian or Greek sentence stays what it is;
- the Latin letters that stand for a plain one (the dotless i, the dotted capital I, the small
  capitals, the negative circled and squared and the parenthesized letters of "fancy text":
  "ʀᴇꜰᴜɴᴅ", "🅡🅔🅕🅤🅝🅓", "⒭⒠⒡⒰⒩⒟" are "refund") are that letter, in any word, and the
  combining underline or stroke left on a Latin letter ("r̲e̲f̲u̲n̲d̲") is dropped;
- every dash and hyphen (non-breaking hyphen, figure dash, en and em dash, minus) is "-" where it
  joins two characters, and typographic quotes are ASCII quotes;
- Markdown emphasis around a word ("**refund**", "_shipped_", "`paid`") is removed;
- a word spelled out in single letters ("R E F U N D", "r.e.f.u.n.d", "E-R-S-T-A-T-T-E-T": three
  or more single letters, each apart by one or two spaces, dots or hyphens) is one word again;
- German written without umlauts ("Rueckerstattung", "fuer", "zurueck") is read with them where
  that makes the word hold the stem of a claim's word ("due", "queue", "does" stay as they are);
- a word written with digits or @ $ for letters ("r3fund3d", "sh1pped") is read as letters
  where that makes it begin with a claim's stem (below), so SKUs stay as they are, and never
  where it has an order code's shape (10 letters and digits: CR3D1T9999 is a code);
- a hyphen (or ~ _ * ^ | +, or two of them) cut inside the stem of a word a claim is made of ("re-fund",
  "ref*und", "can-celled", "zurück-er-stattet") is closed: only where the first part is shorter than the stem, so
  "credit-card" and "e-mail" stay what they are.

``has_words(text)``: does ``text`` show at least one letter or digit? (an answer of only
U+200B, an escape sequence, U+2800, U+3164 or "-" shows nothing).

Linear in the text: one pass of a few linear regular expressions and ``str.translate``.
"""

from __future__ import annotations

import html
import re
import unicodedata

# The blank "letters" and the lookalikes of two scripts are one table with the order codes' (in
# ``vocab``), so a code is read the same way by the checks as by the tool.
from ..vocab import CONFUSABLES, drop_invisible

# CSI / OSC / two-character ESC sequences, and the 8-bit CSI.
_ANSI_RE = re.compile(r"\x1b\[[0-?]{0,64}[ -/]{0,8}[@-~]|\x1b\][^\x07\x1b]{0,2000}(?:\x07|\x1b\\)?|"
                      r"\x1b[@-Z\\-_]?|\x9b[0-?]{0,64}[ -/]{0,8}[@-~]")

# Latin letters that stand for a plain one wherever they are (no other script's word is made of
# them, so no word is left as it is): the dotless i and the dotted capital I (a Turkish keyboard;
# lower() makes İ two characters), and the small capitals of "fancy text" ("ꜱʜɪᴘᴘᴇᴅ", "ʀᴇꜰᴜɴᴅ"),
# which NFKC keeps: every LATIN LETTER SMALL CAPITAL that is one letter.
_LATIN = str.maketrans({"ı": "i", "İ": "I", "ɢ": "G", "ɪ": "I", "ɴ": "N", "ʀ": "R", "ʏ": "Y", "ʙ": "B",
                        "ʜ": "H", "ʟ": "L", "ᴀ": "A", "ᴄ": "C", "ᴅ": "D", "ᴇ": "E", "ᴊ": "J", "ᴋ": "K",
                        "ᴍ": "M", "ᴏ": "O", "ᴘ": "P", "ᴛ": "T", "ᴜ": "U", "ᴠ": "V", "ᴡ": "W", "ᴢ": "Z",
                        "ꜰ": "F", "ꜱ": "S", "ꞯ": "Q",
                        # the negative circled and negative squared capitals of "fancy text"
                        # ("🅡🅔🅕🅤🅝🅓", "🆁🅴🅵🆄🅽🅳"), which NFKC keeps
                        **{chr(0x1F150 + i): chr(65 + i) for i in range(26)},
                        **{chr(0x1F170 + i): chr(65 + i) for i in range(26)}})
# The parenthesized small letters ("⒭⒠⒡⒰⒩⒟"), which NFKC would make "(r)(e)...": read before it.
_PAREN = str.maketrans({chr(0x249C + i): chr(97 + i) for i in range(26)})
# Combining marks left on a Latin letter after NFKC composed what it could: the underline and
# strike-through of "fancy text" ("r̲e̲f̲u̲n̲d̲"); a letter with its accent (é, ä) is one character by
# then and is kept.
_MARKS_RE = re.compile(r"(?<=[A-Za-z])[\u0300-\u036f\u1ab0-\u1aff\u1dc0-\u1dff\u20d0-\u20ff\ufe20-\ufe2f]+")
_WORD_RE = re.compile(r"\w+")

_DASHES = "\u2010\u2011\u2012\u2013\u2014\u2015\u2043\u2212\ufe58\ufe63\uff0d"
_PUNCT = str.maketrans({**{d: "-" for d in _DASHES}, "\u2018": "'", "\u2019": "'", "\u201a": "'",
                        "\u201b": "'", "\u2032": "'", "\u00b4": "'", "\u201c": '"', "\u201d": '"',
                        "\u201e": '"', "\u201f": '"', "\u00ab": '"', "\u00bb": '"', "\u2039": "'",
                        "\u203a": "'"})
# One-character classes a text is searched for before a pass that only they start: one scan in C,
# not a Python test of each character (a 20,000-character run-on answer took ~4 ms a fold).
_MARKUP_CUE = re.compile(r"[*_~`]")
_CUT_CUE = re.compile(r"[-~_*^|+]")
_LEET_CUE = re.compile(r"[013457@$]")
_CONFUSABLE_CUE = re.compile("[" + re.escape("".join(map(chr, CONFUSABLES))) + "]")

# A word in single letters: three or more, apart by one or two spaces, dots or hyphens (linear:
# every repeat begins with a separator and holds one letter).
_SPELLED_RE = re.compile(r"(?<![^\W_])[^\W\d_](?:[ .-]{1,2}[^\W\d_]){2,40}(?![^\W_])")
_SPELLED_CUE = re.compile(r"(?<![^\W_])[^\W\d_][ .-]{1,2}[^\W\d_][ .-]{1,2}[^\W\d_](?![^\W_])")
# The stems of the words claims are made of (promises, statuses, licenses): a hyphen inside one
# of them is closed.
_STEMS = ("refund", "reimburs", "credit", "compensat", "replac", "discount", "voucher", "coupon", "cancel",
          "dispatch", "deliver", "shipped", "shipping", "arrived", "payment", "confirm", "licen", "approv",
          "process", "issued", "erstatt", "rückerstatt", "rückzahl", "zurückzahl", "zurückerstatt", "gutschr",
          "gutschein", "rabatt", "entschädig", "storn", "versand", "versend", "verschick", "zugestellt",
          "geliefert", "bezahlt", "zahlung", "lizenz", "genehmig", "veranlass", "bestätig")
_STEM_START = re.compile("|".join(sorted(_STEMS, key=len, reverse=True)), re.I)
_SPLIT_WORD_RE = re.compile(r"(?<![\w~*^|+-])([^\W\d_]{1,12})[-~_*^|+]{1,2}([^\W\d_]{1,16})"
                            r"(?:[-~_*^|+]{1,2}([^\W\d_]{1,16}))?(?![\w~*^|+-])")
# A word written with digits or @ $ for letters ("r3fund3d", "sh1pped", "$hipped"): read as
# letters only where that makes it begin with a claim's stem, so an order code (GH56JK78MN), a
# SKU or "2nd" stays what it is. 1 is tried as i, then as l.
_LEET_WORD_RE = re.compile(r"(?<![\w@$])(?=[\w@$]*[0-9@$])(?=[\w@$]*[^\W\d_])[\w@$]{4,24}(?![\w@$])")
_LEET = (str.maketrans("013457@$", "oieastas"), str.maketrans("013457@$", "oleastas"))


def _leet_word(m: re.Match) -> str:
    w = m.group(0)
    if len(w) == 10 and w.isalnum():
        return w  # the shape of an order code (CR3D1T9999, D15C0UNT12): a code is never a word
    for table in _LEET:
        read = w.translate(table)
        if _STEM_START.match(read):
            return read
    return w


def _spelled(m: re.Match) -> str:
    return "".join(c for c in m.group(0) if c not in " .-")


def _split_word(m: re.Match) -> str:
    parts = [p for p in m.groups() if p]
    joined = "".join(parts)
    st = _STEM_START.match(joined)
    return joined if st is not None and len(parts[0]) < st.end() else m.group(0)


# German written without umlauts ("Rueckerstattung", "zurueck", "fuer", "enthaelt"), as a
# keyboard without them writes it: a word holding ae, oe or ue is read with the umlauts where
# that makes it hold one of these stems (the umlaut words the floor's patterns are made of;
# tests/test_invisible.py holds every one of the needles to a stem here), so "due", "queue",
# "does" or "Michael" stay as they are.
_UMLAUT_STEMS = ("für", "über", "rück", "prüf", "wäre", "höhe", "märz", "fünf", "würd", "läuft", "mäuse", "klär",
                 "hülle", "zwölf", "hätte", "könn", "änden", "kümmer", "bücher", "nthält", "erhält", "gebühr",
                 "müss", "möcht", "jänner", "dürf", "gewähr", "möglich", "nächst", "beträgt", "bestätig", "erwähn",
                 "broschüre", "ausgelöst", "ladegerät", "sämtlich", "kopfhörer", "stück", "günstig", "schlüssel",
                 "entschädig", "vergüt", "händig", "geführt", "önnen", "käuf", "entfäll")
_LETTERS_BEFORE_RE = re.compile(r"[^\W\d_]{0,40}$")
_LETTERS_AFTER_RE = re.compile(r"[^\W\d_]{0,40}")
_UMLAUT = {"ae": "ä", "oe": "ö", "ue": "ü", "Ae": "Ä", "Oe": "Ö", "Ue": "Ü", "AE": "Ä", "OE": "Ö", "UE": "Ü",
           "aE": "ä", "oE": "ö", "uE": "ü"}
_UMLAUT_PAIR_RE = re.compile(r"[AaOoUu][Ee]")


def _umlaut_word(w: str) -> str:
    read = _UMLAUT_PAIR_RE.sub(lambda p: _UMLAUT[p.group(0)], w)
    low = read.lower()
    return read if any(st in low for st in _UMLAUT_STEMS) else w


def umlauts(text: str) -> str:
    """TEXT with each word that holds ae, oe or ue read by ``_umlaut_word``: found from its
    pairs (a few in a text), each word once."""
    parts, last = [], 0
    for m in _UMLAUT_PAIR_RE.finditer(text):
        if m.start() < last:
            continue  # a second pair of a word already read
        a = m.start() - len(_LETTERS_BEFORE_RE.search(text, max(last, m.start() - 40), m.start()).group(0))
        b = _LETTERS_AFTER_RE.match(text, m.end()).end()
        parts += [text[last:a], _umlaut_word(text[a:b])]
        last = b
    if not parts:
        return text
    parts.append(text[last:])
    return "".join(parts)


_MARKUP_RE = re.compile(r"(?<![\w*_~`])[*_~`]{1,3}(?=[^\W_])|(?<=[^\W_])[*_~`]{1,3}(?![\w*_~`])")


def unsplit(text: str) -> str:
    """Words spelled out in letters or cut by a hyphen inside a claim's stem, joined again (see
    the module docstring), and Markdown emphasis around a word removed ("**refund**"), German
    without umlauts read with them. Linear: each pass a pattern with bounded repeats, run only
    when its cue is in the text."""
    if _MARKUP_CUE.search(text):
        text = _MARKUP_RE.sub("", text)
    if _SPELLED_CUE.search(text):
        text = _SPELLED_RE.sub(_spelled, text)
    text = umlauts(text)  # before the cuts: "Rueck-erstattung" is "Rück-erstattung", then one word
    if _CUT_CUE.search(text):
        text = _SPLIT_WORD_RE.sub(_split_word, text)
    if _LEET_CUE.search(text):
        text = _LEET_WORD_RE.sub(_leet_word, text)
    return text


def _latin_word(m: re.Match) -> str:
    w = m.group(0)
    folded = w.translate(CONFUSABLES)
    if folded == w:
        return w
    # a lookalike counts only beside a Latin letter (a mixed-script word): "срор" stays Russian
    return folded if any("a" <= c <= "z" or "A" <= c <= "Z" for c in w) else w


# Controls that show as nothing in a mail or on a screen (C0 and C1 but tab, the line breaks and
# the separators the sentence splitter reads, and DEL): "re\x00fund" is "refund". A carriage
# return inside a word is one too; elsewhere it ends a line.
_CONTROL_RE = re.compile(r"[\x00-\x08\x0e-\x1b\x1f\x7f-\x84\x86-\x9f]+")
_CR_IN_WORD_RE = re.compile(r"(?<=\w)\r(?=\w)")
# HTML a draft may carry from a rich-text editor: a tag or a comment inside a word ("re<b></b>fund")
# is nothing, an entity with its semicolon is its character ("re&shy;fund", "&#8203;"). Entities
# without a semicolon stay as written ("AT&T", "&not" in prose).
_TAG_RE = re.compile(r"<!--.{0,2000}?-->|</?[A-Za-z][A-Za-z0-9]{0,15}(?:\s[^<>]{0,300})?/?>", re.S)
_ENTITY_RE = re.compile(r"&(?:#[0-9]{1,7}|#[xX][0-9a-fA-F]{1,6}|[A-Za-z][A-Za-z0-9]{1,31});")


def _entity(m: re.Match) -> str:
    return html.unescape(m.group(0))


def fold(text: str, limit: int | None = None) -> str:
    """``text`` as a reader sees it (see the module docstring); not case-folded (codes and SKUs
    are told by their capitals), but every pattern of the floor ignores case. ``limit``: at most
    that many characters are kept (NFKC can lengthen a text: one ligature is up to 18 letters)."""
    if not isinstance(text, str) or not text:
        return ""
    if limit is not None:
        text = text[:2 * limit]
    if "\x1b" in text or "\x9b" in text:
        text = _ANSI_RE.sub("", text)
    if "<" in text:
        text = _TAG_RE.sub("", text)
    if "&" in text:
        text = _ENTITY_RE.sub(_entity, text)
    if _CONTROL_RE.search(text):
        text = _CONTROL_RE.sub("", text)
    if "\r" in text:
        text = _CR_IN_WORD_RE.sub("", text)
    if text.isascii():
        text = unsplit(text)
        return text[:limit] if limit is not None else text
    text = unicodedata.normalize("NFKC", drop_invisible(text).translate(_PAREN))
    if limit is not None:
        text = text[:2 * limit]
    text = drop_invisible(text)  # NFKC can make new ones (none today; cheap)
    text = text.translate(_PUNCT).translate(_LATIN)
    if _MARKS_RE.search(text):
        text = _MARKS_RE.sub("", text)
    if _CONFUSABLE_CUE.search(text):
        text = _WORD_RE.sub(_latin_word, text)
    text = unsplit(text)
    return text[:limit] if limit is not None else text


def key(text: str) -> str:
    """``fold`` then case-folded with spaces collapsed: how two texts are compared."""
    return " ".join(fold(text).replace("_", " ").casefold().split())


def has_words(text: object) -> bool:
    """Does ``text`` show at least one letter or digit once folded?"""
    return isinstance(text, str) and any(c.isalnum() for c in fold(text))
