"""Secrets never reach a log line: one redaction pass over every record, whatever produced its text.

Credentials travel inside objects that get logged whole: aiohttp's exceptions print their request
(``RequestInfo`` with its headers, so ``Authorization`` and ``Proxy-Authorization``) and their connection key
(the proxy URL with its user info and a ``BasicAuth(password=...)``); a URL may carry a token in its query;
a YAML error quotes the lines around the fault, which in a kubeconfig are tokens and keys. Rather than hope
every call site formats its exception carefully, ``RedactSecrets`` (a ``logging.Filter`` installed on the
process's handler) rewrites each record once, before any formatter sees it: the message, every string in
its ``extra`` fields, and the formatted traceback. ``redact`` is the same pass for text that leaves the
process some other way (an error printed on exit).

What is recognised (the value is replaced by ``***``, its name kept so the line still says what it was):
``Authorization``/``Proxy-Authorization`` values and bare ``Bearer``/``Basic`` credentials; the password of a
URL's user info; ``password=``/``password:`` pairs (``BasicAuth`` reprs); kubeconfig secret fields (``token``,
``client-key-data``, ``password``, ...); token-like URL query parameters; JSON Web Tokens (service account
tokens) wherever they appear; PEM private key blocks.
"""

from __future__ import annotations

import logging
import re
import traceback
from typing import Any

__all__ = ["RedactSecrets", "redact"]

MASK = "***"

_RULES: tuple[tuple[re.Pattern[str], str], ...] = (
    # PEM private keys, whole
    (
        re.compile(r"-----BEGIN [A-Z ]*PRIVATE KEY-----.*?(?:-----END [A-Z ]*PRIVATE KEY-----|\Z)", re.S),
        "-----PRIVATE KEY " + MASK + "-----",
    ),
    # Authorization / Proxy-Authorization headers, in a header dump or a dict/multidict repr
    (
        re.compile(
            r"""(?i)((?:proxy-)?authorization['"]?\s*[:=]\s*['"]?)(?:(bearer|basic)\s+)?[^\s'",)>]+"""
        ),
        r"\1\2 " + MASK,
    ),
    # bare bearer / basic credentials
    (re.compile(r"(?i)\b(bearer|basic)\s+[A-Za-z0-9\-._~+/]{8,}=*"), r"\1 " + MASK),
    # user:password@ in any URL
    (re.compile(r"""(\b[a-zA-Z][a-zA-Z0-9+.\-]*://[^\s:/@'"]*):[^\s@/'"]*@"""), r"\1:" + MASK + "@"),
    # password=..., password: ... (BasicAuth reprs, YAML, query strings)
    (re.compile(r"""(?i)\b(password['"]?\s*[=:]\s*)(['"]?)[^\s'",)&]+"""), r"\1\2" + MASK),
    # kubeconfig secret fields
    (
        re.compile(
            r"""(?i)\b((?:client-key-data|client-certificate-data|token|id-token|refresh-token|access-token|"""
            r"""client-secret|secret)['"]?\s*:\s*)(['"]?)[^\s'",}]+"""
        ),
        r"\1\2" + MASK,
    ),
    # token-like query parameters
    (
        re.compile(
            r"(?i)([?&](?:access_token|token|id_token|password|secret|sig|signature|x-amz-signature)=)[^&\s'\"]+"
        ),
        r"\1" + MASK,
    ),
    # JSON Web Tokens (service account tokens), wherever they stand
    (re.compile(r"\beyJ[A-Za-z0-9_\-]{4,}\.[A-Za-z0-9_\-]{4,}\.[A-Za-z0-9_\-]*"), MASK),
)


#: a word at least one rule needs to match: text without any (most log lines: names, reasons, counts) is
#: returned as it is after one scan instead of one per rule (every decision logs a line)
_ANY_RULE = re.compile(r"(?i)-----BEGIN|authorization|bearer|basic|://|password|client-|token|secret|sig|eyJ")


def redact(text: str) -> str:
    """``text`` with every credential this module recognises replaced by ``***``."""
    if _ANY_RULE.search(text) is None:
        return text
    for pattern, replacement in _RULES:
        text = pattern.sub(replacement, text)
    return text


def _redacted(value: Any) -> Any:
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, list | tuple):
        return type(value)(_redacted(item) for item in value)
    if isinstance(value, dict):
        return {key: _redacted(item) for key, item in value.items()}
    if isinstance(value, BaseException):
        return redact(repr(value))
    return value


#: the attributes every LogRecord has; anything else came in through ``extra=``
_RECORD_FIELDS = frozenset(vars(logging.LogRecord("", 0, "", 0, "", None, None))) | {"message", "asctime"}


class RedactSecrets(logging.Filter):
    """Rewrites a record's message, ``extra`` strings and traceback through ``redact``; never drops one.

    The traceback is formatted here and kept as ``exc_text`` (which ``logging.Formatter`` prints) and as the
    ``exception`` field (which the JSON formatter prints), ``exc_info`` cleared so no formatter renders the
    unredacted original again.
    """

    def filter(self, record: logging.LogRecord) -> bool:
        try:
            message = record.getMessage()
        except Exception:  # a bad format string: logging reports it when formatting, leave it be
            message = str(record.msg)
        record.msg = redact(message)
        record.args = None
        for key, value in list(vars(record).items()):
            if key not in _RECORD_FIELDS:
                setattr(record, key, _redacted(value))
        if record.exc_info and record.exc_info[1] is not None:
            text = redact("".join(traceback.format_exception(*record.exc_info)).rstrip("\n"))
            record.exc_info = None
            record.exc_text = text
            record.exception = text
        elif record.exc_text:
            record.exc_text = redact(record.exc_text)
        if record.stack_info:
            record.stack_info = redact(record.stack_info)
        return True
