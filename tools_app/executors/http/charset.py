"""Decoding a body with the character set a server names, which is attacker input.

``codecs`` also holds codecs that are not character sets, and a ``charset`` parameter reaches
them all: bytes-to-bytes codecs (``bz2_codec``, ``zlib_codec``, ``base64_codec``,
``hex_codec``, ``uu_codec``, ``quopri_codec``) pass ``codecs.getincrementaldecoder`` and turn
785 bytes of ``bz2_codec`` into 1 GiB of bytes; ``punycode`` (and ``idna``, built on it)
decodes in quadratic time; the escape codecs interpret backslashes. Only a text encoding of
the standard library's ``encodings`` package is used here, and the text it gives is capped
in characters as well, whatever the codec.
"""

from __future__ import annotations

import codecs

# Text encodings to Python that are not character sets a document is written in.
_NOT_CHARSETS = {"punycode", "idna", "unicode-escape", "raw-unicode-escape", "undefined"}
_SLICE = 65_536


def text_codec(charset: str) -> codecs.CodecInfo | None:
    """The codec of ``charset`` if it is a character set, else None (unknown to Python, a
    bytes-to-bytes codec, or not one of the standard library's)."""
    try:
        info = codecs.lookup(charset)
    except (LookupError, ValueError, TypeError):
        return None
    # A codec registered without saying otherwise counts as text (CodecInfo's default),
    # hence the check of where its decoder comes from as well.
    decoder = info.incrementaldecoder
    if (
        getattr(info, "_is_text_encoding", False) is not True
        or info.name in _NOT_CHARSETS
        or decoder is None
        or not str(getattr(decoder, "__module__", "")).startswith("encodings.")
    ):
        return None
    return info


def codec_trap(charset: str) -> bool:
    """Whether ``charset`` names a codec Python has that is no character set (``bz2_codec``,
    ``punycode``…): no honest server sends one, so a body declared so is refused outright,
    where an unknown name only leaves the body undecoded."""
    try:
        codecs.lookup(charset)
    except (LookupError, ValueError, TypeError):
        return False
    return text_codec(charset) is None


def decode_text(
    data: bytes, codec: codecs.CodecInfo, *, final: bool, max_chars: int
) -> tuple[str, bool]:
    """``data`` decoded strictly by ``codec``, slice by slice, and whether the text was cut at
    ``max_chars`` characters. ``final=False``: ``data`` itself was cut, so a character split
    at its end is left out. Raises UnicodeDecodeError."""
    decoder = codec.incrementaldecoder(errors="strict")
    parts: list[str] = []
    room = max_chars
    for start in range(0, len(data), _SLICE):
        last = start + _SLICE >= len(data)
        part = decoder.decode(data[start : start + _SLICE], final=final and last)
        if not isinstance(part, str):  # a codec that claimed to be text
            raise UnicodeDecodeError(codec.name, data, start, start + 1, "not a text codec")
        if len(part) > room or (len(part) == room and not last):
            parts.append(part[:room])
            return "".join(parts), True
        parts.append(part)
        room -= len(part)
    return "".join(parts), False
