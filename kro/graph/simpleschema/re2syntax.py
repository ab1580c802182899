"""kro.graph.simpleschema.re2syntax: does a `pattern=` regex compile under Go's regexp (RE2)?

Upstream checks `pattern` markers with Go's `regexp.Compile` (S-21), and the apiserver uses the
same engine when it enforces the CRD. Python's `re` disagrees both ways (it rejects `\\pL`,
`\\z`, `(?<name>x)`, mid-pattern `(?i)`; it accepts lookarounds, backreferences, possessive
quantifiers, `\\Z`), so this module re-implements the parts of Go's `regexp/syntax.Parse` (Perl
flags) that decide *whether* a pattern is valid, and reports Go's error text. It builds no
matcher.

Not checked (Go would reject; the apiserver still will at CRD creation): repeat counts whose
nested product exceeds 1000 (`(a{100}){100}`), programs over Go's size limit, nesting deeper
than 1000, and Unicode script names newer than Unicode 15.

Public API:
    re2_syntax_error(pattern) -> str | None    Go's error text, e.g.
        "error parsing regexp: missing closing ): `(abc`", or None if the pattern is valid
"""

from __future__ import annotations

from typing import Final

_MAX_REPEAT: Final = 1000

_POSIX_CLASSES: Final = frozenset(
    f"[:{neg}{name}:]"
    for neg in ("", "^")
    for name in (
        *("alnum", "alpha", "ascii", "blank", "cntrl", "digit", "graph"),
        *("lower", "print", "punct", "space", "upper", "word", "xdigit"),
    )
)

# Go's unicode.Categories keys, "Any", and unicode.Scripts keys (Unicode 15.0), compared
# case-insensitively: newer Go versions accept more spellings, and wrongly rejecting a pattern
# would block an RGD that upstream accepts, while wrongly accepting one only defers the error
# to the apiserver.
_UNICODE_CLASSES: Final = frozenset(
    """Any C Cc Cf Co Cs L Ll Lm Lo Lt Lu M Mc Me Mn N Nd Nl No P Pc Pd Pe Pf Pi Po Ps S Sc Sk
    Sm So Z Zl Zp Zs Adlam Ahom Anatolian_Hieroglyphs Arabic Armenian Avestan Balinese Bamum
    Bassa_Vah Batak Bengali Bhaiksuki Bopomofo Brahmi Braille Buginese Buhid Canadian_Aboriginal
    Carian Caucasian_Albanian Chakma Cham Cherokee Chorasmian Common Coptic Cuneiform Cypriot
    Cypro_Minoan Cyrillic Deseret Devanagari Dives_Akuru Dogra Duployan Egyptian_Hieroglyphs
    Elbasan Elymaic Ethiopic Georgian Glagolitic Gothic Grantha Greek Gujarati Gunjala_Gondi
    Gurmukhi Han Hangul Hanifi_Rohingya Hanunoo Hatran Hebrew Hiragana Imperial_Aramaic
    Inherited Inscriptional_Pahlavi Inscriptional_Parthian Javanese Kaithi Kannada Katakana Kawi
    Kayah_Li Kharoshthi Khitan_Small_Script Khmer Khojki Khudawadi Lao Latin Lepcha Limbu
    Linear_A Linear_B Lisu Lycian Lydian Mahajani Makasar Malayalam Mandaic Manichaean Marchen
    Masaram_Gondi Medefaidrin Meetei_Mayek Mende_Kikakui Meroitic_Cursive Meroitic_Hieroglyphs
    Miao Modi Mongolian Mro Multani Myanmar Nabataean Nag_Mundari Nandinagari New_Tai_Lue Newa
    Nko Nushu Nyiakeng_Puachue_Hmong Ogham Ol_Chiki Old_Hungarian Old_Italic Old_North_Arabian
    Old_Permic Old_Persian Old_Sogdian Old_South_Arabian Old_Turkic Old_Uyghur Oriya Osage
    Osmanya Pahawh_Hmong Palmyrene Pau_Cin_Hau Phags_Pa Phoenician Psalter_Pahlavi Rejang Runic
    Samaritan Saurashtra Sharada Shavian Siddham SignWriting Sinhala Sogdian Sora_Sompeng Soyombo
    Sundanese Syloti_Nagri Syriac Tagalog Tagbanwa Tai_Le Tai_Tham Tai_Viet Takri Tamil Tangsa
    Tangut Telugu Thaana Thai Tibetan Tifinagh Tirhuta Toto Ugaritic Vai Vithkuqi Wancho
    Warang_Citi Yezidi Yi Zanabazar_Square""".casefold().split()
)

_HEX: Final = frozenset("0123456789abcdefABCDEF")
_OCTAL: Final = frozenset("01234567")
_C_ESCAPES: Final = frozenset("afnrtv")
_PERL_CLASSES: Final = frozenset("dDsSwW")

# Parser stack entries: an operand, or one of the two pseudo-operators Go keeps on its stack.
_ATOM, _LPAREN, _VBAR = "atom", "(", "|"


class _Fail(Exception):
    def __init__(self, code: str, expr: str) -> None:
        super().__init__(f"error parsing regexp: {code}: `{expr}`")


def re2_syntax_error(pattern: str) -> str | None:
    """Go's `regexp.Compile` error text for `pattern`, or None if Go accepts it."""
    try:
        _Parser(pattern).parse()
    except _Fail as exc:
        return str(exc)
    return None


def _is_ascii_alnum(ch: str) -> bool:
    return ch.isascii() and ch.isalnum()


class _Parser:
    def __init__(self, pattern: str) -> None:
        self.s = pattern
        self.stack: list[str] = []

    # -- stack model -----------------------------------------------------------------------

    def collapse(self) -> None:
        """Go's concat + alternate: everything above the innermost `(` becomes one operand."""
        while self.stack and self.stack[-1] != _LPAREN:
            self.stack.pop()
        self.stack.append(_ATOM)

    def vertical_bar(self) -> None:
        while self.stack and self.stack[-1] not in (_LPAREN, _VBAR):
            self.stack.pop()
        if not self.stack or self.stack[-1] != _VBAR:
            self.stack.append(_VBAR)

    def right_paren(self) -> None:
        if _LPAREN not in self.stack:
            raise _Fail("unexpected )", self.s)
        while self.stack[-1] != _LPAREN:
            self.stack.pop()
        self.stack[-1] = _ATOM

    # -- main loop (regexp/syntax.parse) -----------------------------------------------------

    def parse(self) -> None:
        s = self.s
        i = 0
        last_repeat: int | None = None  # start offset of the previous repeat operator
        while i < len(s):
            repeat: int | None = None
            ch = s[i]
            if ch == "(":
                i = self.perl_flags(i) if s.startswith("(?", i) else self.push(_LPAREN, i + 1)
            elif ch == "|":
                self.vertical_bar()
                i += 1
            elif ch == ")":
                self.right_paren()
                i += 1
            elif ch == "[":
                i = self.push(_ATOM, self.char_class(i))
            elif ch in "*+?":
                repeat, i = i, self.repeat(i, i + 1, last_repeat)
            elif ch == "{":
                bounds = self.repeat_bounds(i)
                if bounds is None:
                    i = self.push(_ATOM, i + 1)  # not a valid repeat: `{` is a literal
                else:
                    repeat, i = i, self.repeat(i, bounds, last_repeat)
            elif ch == "\\":
                i = self.backslash(i)
            else:
                i = self.push(_ATOM, i + 1)
            last_repeat = repeat
        if _LPAREN in self.stack:
            raise _Fail("missing closing )", s)

    def push(self, entry: str, next_index: int) -> int:
        self.stack.append(entry)
        return next_index

    def repeat(self, start: int, after: int, last_repeat: int | None) -> int:
        s = self.s
        if after < len(s) and s[after] == "?":
            after += 1  # non-greedy
        if last_repeat is not None:
            raise _Fail("invalid nested repetition operator", s[last_repeat:after])
        if not self.stack or self.stack[-1] != _ATOM:
            raise _Fail("missing argument to repetition operator", s[start:after])
        return after

    def repeat_bounds(self, start: int) -> int | None:
        """End index of a valid `{n}`, `{n,}` or `{n,m}` at `start`; None if it is no repeat."""
        s = self.s
        lo, i = _parse_int(s, start + 1)
        if lo is None or i >= len(s):
            return None
        hi = lo
        too_big = lo < 0
        if s[i] == ",":
            i += 1
            if i >= len(s):
                return None
            if s[i] == "}":
                hi = -1  # unbounded
            else:
                parsed, i = _parse_int(s, i)
                if parsed is None:
                    return None
                hi = parsed
                too_big = too_big or hi < 0
        if i >= len(s) or s[i] != "}":
            return None
        end = i + 1
        if too_big or lo > _MAX_REPEAT or hi > _MAX_REPEAT or (hi >= 0 and lo > hi):
            raise _Fail("invalid repeat count", s[start:end])
        return end

    def perl_flags(self, start: int) -> int:
        s = self.s
        rest = len(s) - start
        named_p = rest > 4 and s.startswith("(?P<", start)
        if named_p or (rest > 3 and s.startswith("(?<", start)):
            begin = start + (4 if named_p else 3)
            end = s.find(">", start)
            if end < 0:
                raise _Fail("invalid named capture", s[start:])
            name = s[begin:end]
            if not name or not all(c == "_" or _is_ascii_alnum(c) for c in name):
                raise _Fail("invalid named capture", s[start : end + 1])
            return self.push(_LPAREN, end + 1)
        i = start + 2
        sign = 1
        saw_flag = False
        while i < len(s):
            ch = s[i]
            i += 1
            if ch in "imsU":
                saw_flag = True
            elif ch == "-" and sign > 0:
                sign, saw_flag = -1, False
            elif ch in ":)" and (sign > 0 or saw_flag):
                if ch == ":":
                    self.stack.append(_LPAREN)
                return i
            else:
                break
        raise _Fail("invalid or unsupported Perl syntax", s[start:i])

    def backslash(self, start: int) -> int:
        s = self.s
        nxt = s[start + 1] if start + 1 < len(s) else ""
        if nxt in ("A", "b", "B", "z"):
            return self.push(_ATOM, start + 2)
        if nxt == "C":
            raise _Fail("invalid escape sequence", s[start : start + 2])
        if nxt == "Q":
            end = s.find("\\E", start + 2)
            literal_end = len(s) if end < 0 else end
            if literal_end > start + 2:
                self.stack.append(_ATOM)
            return len(s) if end < 0 else end + 2
        if nxt in ("p", "P"):
            return self.push(_ATOM, self.unicode_class(start))
        if nxt and nxt in _PERL_CLASSES:
            return self.push(_ATOM, start + 2)
        return self.push(_ATOM, self.escape(start))

    # -- pieces shared by the main loop and character classes -------------------------------

    def unicode_class(self, start: int) -> int:
        """`\\pL`, `\\p{Greek}`, `\\P{^Greek}`: end index, or fail on an unknown name."""
        s = self.s
        i = start + 2
        if i < len(s) and s[i] == "{":
            close = s.find("}", start)
            if close < 0:
                raise _Fail("invalid character class range", s[start:])
            seq, name = s[start : close + 1], s[i + 1 : close]
            end = close + 1
        else:
            end = min(i + 1, len(s))
            seq, name = s[start:end], s[i:end]
        if name.startswith("^"):
            name = name[1:]
        if name.casefold() not in _UNICODE_CLASSES:
            raise _Fail("invalid character class range", seq)
        return end

    def escape(self, start: int) -> int:
        """One ordinary escape (Go's parseEscape): end index, or fail."""
        s = self.s
        i = start + 1
        if i >= len(s):
            raise _Fail("trailing backslash at end of expression", "")
        ch = s[i]
        i += 1
        if ch.isascii() and not ch.isalnum():
            return i  # escaped punctuation is itself
        if ch in "1234567" and (i >= len(s) or s[i] not in _OCTAL):
            raise _Fail("invalid escape sequence", s[start:i])  # a backreference
        if ch in "01234567":
            for _ in range(2):
                if i < len(s) and s[i] in _OCTAL:
                    i += 1
            return i
        if ch == "x":
            return self.hex_escape(start, i)
        if ch in _C_ESCAPES:
            return i
        raise _Fail("invalid escape sequence", s[start:i])

    def hex_escape(self, start: int, i: int) -> int:
        s = self.s
        if i < len(s) and s[i] == "{":
            i += 1
            digits = 0
            value = 0
            while i < len(s) and s[i] != "}":
                if s[i] not in _HEX:
                    raise _Fail("invalid escape sequence", s[start : i + 1])
                value = value * 16 + int(s[i], 16)
                i += 1
                if value > 0x10FFFF:
                    raise _Fail("invalid escape sequence", s[start:i])
                digits += 1
            if i >= len(s) or digits == 0:
                raise _Fail("invalid escape sequence", s[start : min(i + 1, len(s))])
            return i + 1
        pair = s[i : i + 2]
        if len(pair) < 2 or not all(c in _HEX for c in pair):
            raise _Fail("invalid escape sequence", s[start : min(i + 2, len(s))])
        return i + 2

    def char_class(self, start: int) -> int:
        """`[...]` starting at `start` (Go's parseClass): end index after `]`, or fail."""
        s = self.s
        i = start + 1
        if i < len(s) and s[i] == "^":
            i += 1
        first = True
        while i >= len(s) or s[i] != "]" or first:
            first = False
            if s.startswith("[:", i):
                close = s.find(":]", i + 2)
                if close >= 0:
                    name = s[i : close + 2]
                    if name not in _POSIX_CLASSES:
                        raise _Fail("invalid character class range", name)
                    i = close + 2
                    continue
            if s.startswith(("\\p", "\\P"), i):
                i = self.unicode_class(i)
                continue
            if s.startswith("\\", i) and i + 1 < len(s) and s[i + 1] in _PERL_CLASSES:
                i += 2
                continue
            range_start = i
            lo, i = self.class_char(i, start)
            if i + 1 < len(s) and s[i] == "-" and s[i + 1] != "]":
                hi, i = self.class_char(i + 1, start)
                if hi < lo:
                    raise _Fail("invalid character class range", s[range_start:i])
        return i + 1

    def class_char(self, i: int, class_start: int) -> tuple[int, int]:
        """One character of a class as (code point, next index)."""
        s = self.s
        if i >= len(s):
            raise _Fail("missing closing ]", s[class_start:])
        if s[i] != "\\":
            return ord(s[i]), i + 1
        end = self.escape(i)
        return _escape_value(s[i:end]), end


def _parse_int(s: str, i: int) -> tuple[int | None, int]:
    """Go's parser.parseInt: digits without a leading zero; -1 when too big to be a count."""
    if i >= len(s) or not ("0" <= s[i] <= "9"):
        return None, i
    if s[i] == "0" and i + 1 < len(s) and "0" <= s[i + 1] <= "9":
        return None, i
    j = i
    while j < len(s) and "0" <= s[j] <= "9":
        j += 1
    return (int(s[i:j]) if j - i <= 8 else -1), j


def _escape_value(esc: str) -> int:
    """Code point of a validated escape (`\\n`, `\\x41`, `\\x{263a}`, `\\101`, `\\.`)."""
    body = esc[1:]
    if body[0] == "x":
        return int(body[1:].strip("{}"), 16)
    if body[0] in _OCTAL:
        return int(body, 8)
    return ord({"a": "\a", "f": "\f", "n": "\n", "r": "\r", "t": "\t", "v": "\v"}.get(body, body))
