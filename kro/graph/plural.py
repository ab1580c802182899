"""kro.graph.plural: English pluralization exactly as github.com/gobuffalo/flect v1.0.3 does it.

Upstream kro names a generated CRD `<plural>.<group>` and watches the resource `<plural>` with
`plural = flect.Pluralize(strings.ToLower(kind))` (§1.O, N-18). Any difference here would create
a CRD under another name than upstream kro and break upgrades, so this is a faithful port of
flect's algorithm — including its quirks: a lowercased kind that is a known acronym with a
trailing `s` pluralizes oddly (`dns` -> `dnsDNSes`), and `octopus` -> `octupuses` (sic).

The rule tables below are transcribed from flect v1.0.3 (`plural_rules.go`, `acronyms.go`),
MIT License, Copyright (c) 2019 Mark Bates. `tests/graph/data/flect_plural_vectors.json` holds
the output of the real flect for ~1,400 words; the tests compare against it.
Only `Pluralize` is ported; flect's custom data files (`inflections.json`) are not read.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Callable
from typing import Final

# (singular, plural, alternative, flags); flags: U=unidirectional, C=uncountable, E=exact.
_DICTIONARY: Final[tuple[tuple[str, str, str, str], ...]] = (
    ("aircraft", "aircraft", "", ""),
    ("beef", "beef", "beefs", ""),
    ("bison", "bison", "", ""),
    ("blues", "blues", "", "U"),
    ("chassis", "chassis", "", ""),
    ("deer", "deer", "", ""),
    ("fish", "fish", "fishes", ""),
    ("moose", "moose", "", ""),
    ("police", "police", "", ""),
    ("salmon", "salmon", "salmons", ""),
    ("series", "series", "", ""),
    ("sheep", "sheep", "", ""),
    ("shrimp", "shrimp", "shrimps", ""),
    ("species", "species", "", ""),
    ("swine", "swine", "swines", ""),
    ("trout", "trout", "trouts", ""),
    ("tuna", "tuna", "tunas", ""),
    ("you", "you", "", ""),
    ("child", "children", "", ""),
    ("ox", "oxen", "", "E"),
    ("foot", "feet", "", ""),
    ("goose", "geese", "", ""),
    ("man", "men", "", ""),
    ("human", "humans", "", ""),
    ("louse", "lice", "", "E"),
    ("mouse", "mice", "", ""),
    ("tooth", "teeth", "", ""),
    ("woman", "women", "", ""),
    ("die", "dice", "", "E"),
    ("person", "people", "", ""),
    ("adieu", "adieux", "adieus", ""),
    ("fabliau", "fabliaux", "", ""),
    ("bureau", "bureaus", "bureaux", ""),
    ("criterion", "criteria", "", ""),
    ("ganglion", "ganglia", "ganglions", ""),
    ("lexicon", "lexica", "lexicons", ""),
    ("mitochondrion", "mitochondria", "mitochondrions", ""),
    ("noumenon", "noumena", "", ""),
    ("phenomenon", "phenomena", "", ""),
    ("taxon", "taxa", "", ""),
    ("media", "media", "", ""),
    ("medium", "media", "mediums", "U"),
    ("stadium", "stadiums", "stadia", ""),
    ("aquarium", "aquaria", "aquariums", ""),
    ("auditorium", "auditoria", "auditoriums", ""),
    ("symposium", "symposia", "symposiums", ""),
    ("curriculum", "curriculums", "curricula", ""),
    ("quota", "quotas", "", ""),
    ("alumnus", "alumni", "alumnuses", ""),
    ("bacillus", "bacilli", "", ""),
    ("cactus", "cacti", "cactuses", ""),
    ("coccus", "cocci", "", ""),
    ("focus", "foci", "focuses", ""),
    ("locus", "loci", "locuses", ""),
    ("nucleus", "nuclei", "nucleuses", ""),
    ("octopus", "octupuses", "octopi", ""),
    ("radius", "radii", "radiuses", ""),
    ("syllabus", "syllabi", "", ""),
    ("corpus", "corpora", "corpuses", ""),
    ("genus", "genera", "", ""),
    ("alumna", "alumnae", "", ""),
    ("vertebra", "vertebrae", "", ""),
    ("differentia", "differentiae", "", ""),
    ("minutia", "minutiae", "", ""),
    ("vita", "vitae", "", ""),
    ("larva", "larvae", "", ""),
    ("postcava", "postcavae", "", ""),
    ("praecava", "praecavae", "", ""),
    ("uva", "uvae", "", ""),
    ("apex", "apices", "apexes", ""),
    ("codex", "codices", "codexes", ""),
    ("index", "indices", "indexes", ""),
    ("latex", "latices", "latexes", ""),
    ("vertex", "vertices", "vertexes", ""),
    ("vortex", "vortices", "vortexes", ""),
    ("appendix", "appendices", "appendixes", ""),
    ("radix", "radices", "radixes", ""),
    ("helix", "helices", "helixes", ""),
    ("axis", "axes", "", "E"),
    ("crisis", "crises", "", ""),
    ("ellipsis", "ellipses", "", "U"),
    ("genesis", "geneses", "", ""),
    ("oasis", "oases", "", ""),
    ("thesis", "theses", "", ""),
    ("testis", "testes", "", ""),
    ("base", "bases", "", ""),
    ("basis", "bases", "", "U"),
    ("alias", "aliases", "", "E"),
    ("vedalia", "vedalias", "", ""),
    ("use", "uses", "", "E"),
    ("abuse", "abuses", "", ""),
    ("cause", "causes", "", ""),
    ("clause", "clauses", "", ""),
    ("cruse", "cruses", "", ""),
    ("excuse", "excuses", "", ""),
    ("fuse", "fuses", "", ""),
    ("house", "houses", "", ""),
    ("misuse", "misuses", "", ""),
    ("muse", "muses", "", ""),
    ("pause", "pauses", "", ""),
    ("ache", "aches", "", ""),
    ("topaz", "topazes", "", ""),
    ("buffalo", "buffaloes", "buffalos", ""),
    ("potato", "potatoes", "", ""),
    ("tomato", "tomatoes", "", ""),
    ("equipment", "", "", "C"),
    ("information", "", "", "C"),
    ("jeans", "", "", "C"),
    ("money", "", "", "C"),
    ("news", "", "", "C"),
    ("rice", "", "", "C"),
    ("dwarf", "dwarfs", "dwarves", ""),
    ("hoof", "hoofs", "hooves", ""),
    ("thief", "thieves", "", ""),
    ("chive", "chives", "", ""),
    ("hive", "hives", "", ""),
    ("move", "moves", "", ""),
    ("movie", "movies", "", ""),
    ("cookie", "cookies", "", ""),
    ("pretorium", "pretoriums", "", ""),
    ("agenda", "agendas", "", ""),
    ("formula", "formulas", "formulae", ""),
    ("shoe", "shoes", "", ""),
    ("toe", "toes", "", "E"),
    ("graffiti", "graffiti", "", ""),
    ("ID", "IDs", "", "E"),
)

# Bidirectional suffix rules; list order is rule priority (first match wins).
_SUFFIXES: Final[tuple[tuple[str, str], ...]] = (
    ("tive", "tives"),
    ("eaf", "eaves"),
    ("oaf", "oaves"),
    ("afe", "aves"),
    ("arf", "arves"),
    ("rfe", "rves"),
    ("rf", "rves"),
    ("lf", "lves"),
    ("fe", "ves"),
    ("ay", "ays"),
    ("ey", "eys"),
    ("oy", "oys"),
    ("quy", "quies"),
    ("uy", "uys"),
    ("y", "ies"),
    ("eau", "eaux"),
    ("bula", "bulae"),
    ("dula", "bulae"),
    ("lula", "bulae"),
    ("nula", "bulae"),
    ("vula", "bulae"),
    ("hedron", "hedra"),
    ("ium", "ia"),
    ("seum", "seums"),
    ("eum", "ea"),
    ("oum", "oa"),
    ("stracum", "straca"),
    ("dum", "da"),
    ("elum", "ela"),
    ("ilum", "ila"),
    ("olum", "ola"),
    ("ulum", "ula"),
    ("llum", "lla"),
    ("ylum", "yla"),
    ("imum", "ima"),
    ("ernum", "erna"),
    ("gnum", "gna"),
    ("brum", "bra"),
    ("crum", "cra"),
    ("terum", "tera"),
    ("serum", "sera"),
    ("trum", "tra"),
    ("antum", "anta"),
    ("atum", "ata"),
    ("entum", "enta"),
    ("etum", "eta"),
    ("itum", "ita"),
    ("otum", "ota"),
    ("utum", "uta"),
    ("ctum", "cta"),
    ("ovum", "ova"),
    ("trix", "trices"),
    ("iasis", "iases"),
    ("mesis", "meses"),
    ("kinesis", "kineses"),
    ("resis", "reses"),
    ("gnosis", "gnoses"),
    ("opsis", "opses"),
    ("ysis", "yses"),
    ("ouse", "ouses"),
    ("lause", "lauses"),
    ("us", "uses"),
    ("ch", "ches"),
    ("io", "ios"),
    ("sh", "shes"),
    ("ss", "sses"),
    ("ez", "ezzes"),
    ("iz", "izzes"),
    ("tz", "tzes"),
    ("zz", "zzes"),
    ("ano", "anos"),
    ("lo", "los"),
    ("to", "tos"),
    ("oo", "oos"),
    ("o", "oes"),
    ("x", "xes"),
    ("S", "Ses"),
)

_ACRONYM_TABLE: Final = """
    OK UTF8 HTML JSON JWT ID UUID SQL ACK ACL ADSL AES ANSI API ARP ATM BGP BSS CCITT CHAP
    CIDR CIR CLI CPE CPU CRC CRT CSMA CMOS DCE DEC DES DHCP DNS DRAM DSL DSLAM DTE DMI EHA EIA
    EIGRP EOF ESS FCC FCS FDDI FTP GBIC gbps GEPOF HDLC HTTP HTTPS IANA ICMP IDF IDS IEEE IETF
    IMAP IP IPS ISDN ISP kbps LACP LAN LAPB LAPF LLC MAC Mbps MC MDF MIB MoCA MPLS MTU NAC NAT
    NBMA NIC NRZ NRZI NVRAM OSI OSPF OUI PAP PAT PC PIM PCM PDU POP3 POTS PPP PPTP PTT PVST
    RAM RARP RFC RIP RLL ROM RSTP RTP RCP SDLC SFD SFP SLARP SLIP SMTP SNA SNAP SNMP SOF SRAM
    SSH SSID STP SYN TDM TFTP TIA TOFU UDP URL URI USB UTP VC VLAN VLSM VPN W3C WAN WEP WiFi
    WPA WWW
"""
_BASE_ACRONYMS: Final = frozenset(_ACRONYM_TABLE.split())
"""flect's acronym table; lookups upper-case the word, so mixed-case keys never match."""

_SPACES: Final = "_ :-/"

_Rule = tuple[str, Callable[[str], str]]


def _replace_suffix_rule(suffix: str, replacement: str) -> Callable[[str], str]:
    def apply(word: str) -> str:
        return word[: len(word) - len(suffix)] + replacement

    return apply


def _unchanged(word: str) -> str:
    return word


def _build_tables() -> tuple[dict[str, str], set[str], list[_Rule]]:
    """Replay flect's init(): the two dictionaries and the prepend-built rule list."""
    single_to_plural: dict[str, str] = {}
    plural_to_single: set[str] = set()
    for singular, listed_plural, alternative, flags in _DICTIONARY:
        plural = listed_plural or (singular if "C" in flags else "")
        single_to_plural[singular] = plural
        if "U" not in flags:
            plural_to_single.add(plural)
            if alternative:
                plural_to_single.add(alternative)

    rules: list[_Rule] = []

    def insert(suffix: str, replacement: str) -> None:
        # InsertPluralRule prepends the rule, then a no-op rule for the replacement itself,
        # so already-plural words are left alone.
        rules[:0] = [(replacement, _unchanged), (suffix, _replace_suffix_rule(suffix, replacement))]

    for suffix, replacement in reversed(_SUFFIXES):
        insert(suffix, replacement)
    for singular, plural, _alternative, flags in _DICTIONARY:
        if "E" in flags:
            continue
        insert(singular, plural or singular)
    return single_to_plural, plural_to_single, rules


_SINGLE_TO_PLURAL, _PLURAL_TO_SINGLE, _RULES = _build_tables()


def _is_space(char: str) -> bool:
    return char in _SPACES or char.isspace()


def _is_upper(char: str) -> bool:
    return unicodedata.category(char) == "Lu"


def _is_word_char(char: str) -> bool:
    """Go's IsLetter || IsDigit || IsPunct || '`'."""
    category = unicodedata.category(char)
    return category.startswith(("L", "P")) or category == "Nd" or char == "`"


def _append_part(parts: list[str], part: str) -> None:
    part = part.strip()
    for space in _SPACES:
        part = part.strip(space)
    if part.upper() in _BASE_ACRONYMS:
        part = part.upper()
    if part:
        parts.append(part)


def _parts(word: str) -> list[str]:
    """flect's `toParts`: split into words on separators and case changes."""
    word = word.strip()
    if not word:
        return []
    if word.upper() in _BASE_ACRONYMS:
        return [word.upper()]
    parts: list[str] = []
    current = ""
    previous = "\0"
    for char in word:
        starts_part = _is_space(char) or (
            _is_upper(char) and (not _is_upper(previous) or current.upper() in _BASE_ACRONYMS)
        )
        if starts_part:
            _append_part(parts, current)
            current = char
        elif _is_word_char(char):
            current += char
        else:
            _append_part(parts, current)
            current = ""
        previous = char
    _append_part(parts, current)
    return parts


def _capitalize(word: str) -> str:
    if not _parts(word):
        return ""
    title = word[0].title()
    return (title if len(title) == 1 else word[0]) + word[1:]


def _replace_suffix(original: str, suffix: str, replacement: str) -> str:
    if suffix and original.endswith(suffix):
        original = original[: -len(suffix)]
    return original + replacement


def pluralize(word: str) -> str:
    """flect.Pluralize: `policy` -> `policies`, `person` -> `people`, `webapp` -> `webapps`."""
    parts = _parts(word)
    if not parts:
        return ""
    last = parts[-1]
    if word in _SINGLE_TO_PLURAL:
        return _replace_suffix(word, word, _SINGLE_TO_PLURAL[word])
    lowered = last.lower()
    if word in _PLURAL_TO_SINGLE or lowered in _PLURAL_TO_SINGLE:
        return word
    if lowered in _SINGLE_TO_PLURAL:
        plural = _SINGLE_TO_PLURAL[lowered]
        if last == _capitalize(last):
            plural = _capitalize(plural)
        return _replace_suffix(word, last, plural)
    for suffix, rule in _RULES:
        if last.endswith(suffix):
            return _replace_suffix(word, last, rule(last))
    if lowered.endswith("s"):
        return word
    return word + "s"


def resource_plural(kind: str) -> str:
    """The plural resource name kro uses for a generated kind: `flect.Pluralize(lower(kind))`."""
    return pluralize(kind.lower())
