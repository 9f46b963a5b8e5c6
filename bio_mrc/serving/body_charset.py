"""A JSON body in the charset its ``Content-Type`` names (``charset=iso-8859-1``, ``utf-16``): read as it says.

The server reads JSON bodies as UTF-8 (:mod:`.guards`); a body declared in another charset is decoded as declared
and handed on in UTF-8, one whose charset Python knows no text codec for is refused (415), and one that is not
text in its declared charset is refused (400), each naming the charset.
"""

from __future__ import annotations

import codecs
import email.message

from ..errors import shown_value


def declared_charset(scope) -> str | None:
    """The charset the request's first ``Content-Type`` header names (the one the application reads the body by),
    lower case; None when it names none, or UTF-8, which the server reads anyway."""
    sent = next((value for name, value in scope.get("headers", ()) if name == b"content-type"), None)
    if sent is None:
        return None
    message = email.message.Message()
    message["content-type"] = sent.decode("latin-1")
    charset = message.get_content_charset()
    if charset is None or _codec_name(charset) == "utf-8":
        return None
    return charset


def unknown_charset(charset: str) -> str | None:
    """Why a body in ``charset`` cannot be read (no text codec of that name), or None."""
    if _codec_name(charset) is None:
        return (f"the body's content-type names the charset {shown_value(charset)}, which this server cannot read; "
                "send it in UTF-8 (content-type: application/json; charset=utf-8)")
    return None


def as_utf8(body: bytes, charset: str) -> tuple[bytes | None, str | None]:
    """``body``, text in ``charset``, in UTF-8; or None and why it is not text in that charset."""
    try:
        return body.decode(charset).encode("utf-8"), None
    except UnicodeError as error:
        where = f" at byte {error.start}" if isinstance(error, UnicodeDecodeError) else ""
        reason = getattr(error, "reason", str(error))
        return None, (f"the body is not {charset} text, as its content-type says: {reason}{where}; send it in that "
                      "charset, or say which it is in")


def _codec_name(charset: str) -> str | None:
    """The name of Python's text codec for ``charset``, or None (unknown, or a bytes codec such as base64)."""
    try:
        name = codecs.lookup(charset).name
    except (LookupError, ValueError):  # ValueError: a name holding a NUL
        return None
    try:
        b"\x00".decode(charset)  # a bytes codec (base64) is refused here, as bytes.decode refuses it
    except LookupError:
        return None
    except (UnicodeError, ValueError):  # a text codec, which one byte alone does not satisfy (UTF-16)
        pass
    return name
