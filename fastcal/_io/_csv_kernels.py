"""Numba kernel that splits CSV bytes into records (see :mod:`fastcal._io.csv`).

The state machine is pyarrow's CSV parser's with its defaults (delimiter
``,``, quote ``"``, doubled quotes inside quotes, no escape character, line
breaks allowed inside quotes): a quote opens a quoted section only at the
start of a field and is a plain character anywhere else; inside a quoted
section ``""`` is a quote and a lone ``"`` closes the section. A record ends
at an unquoted LF, CR LF or lone CR.
"""

from __future__ import annotations

from .._core.jit import kernel

__all__ = ["append_fields", "split_records"]

_COMMA, _LF, _CR, _QUOTE = 44, 10, 13, 34


@kernel
def split_records(b, start, final, content_end, next_start):
    """Find up to ``content_end.shape[0]`` whole records of ``b`` from byte ``start`` (a record start).

    ``b`` : uint8 bytes. ``final`` : no more bytes follow ``b`` (a last
    record without a line break is then complete, and so is a CR at the end).
    Record ``i`` found has content ``b[s_i : content_end[i]]``, where ``s_i``
    is ``start`` or ``next_start[i - 1]``, followed by its line break
    (``b[content_end[i] : next_start[i]]``, empty for a last unterminated
    record). Returns the number of records found; bytes after
    ``next_start[k - 1]`` (or after ``start`` if none) hold an incomplete record.
    """
    n = b.shape[0]
    cap = content_end.shape[0]
    k = 0
    i = start
    rec = start
    state = 0  # 0: start of a field, 1: unquoted, 2: inside quotes, 3: a quote inside quotes
    while i < n and k < cap:
        c = b[i]
        if state == 2:
            if c == _QUOTE:
                state = 3
            i += 1
            continue
        if state == 3:
            if c == _QUOTE:
                state = 2
                i += 1
                continue
            state = 1
        if c == _COMMA:
            state = 0
            i += 1
        elif c == _LF:
            content_end[k] = i
            next_start[k] = i + 1
            k += 1
            i += 1
            rec = i
            state = 0
        elif c == _CR:
            if i + 1 < n:
                content_end[k] = i
                next_start[k] = i + 2 if b[i + 1] == _LF else i + 1
                k += 1
                i = next_start[k - 1]
                rec = i
                state = 0
            elif final:
                content_end[k] = i
                next_start[k] = i + 1
                k += 1
                i += 1
                rec = i
            else:
                return k  # a CR at the end: CR LF or a lone CR, decided by the next byte
        else:
            if state == 0 and c == _QUOTE:
                state = 2
            else:
                state = 1
            i += 1
    if final and k < cap and i >= n and rec < n:
        content_end[k] = n
        next_start[k] = n
        k += 1
    return k


@kernel
def append_fields(data, content_end, text, line_end, out):
    """Copy the records of ``data`` into ``out``, each followed by ``,`` and its line of ``text`` before its line break.

    Record ``i`` ends its content at ``content_end[i]``; its line of ``text``
    is ``text[line_end[i - 1] + 1 : line_end[i]]`` (``line_end[-1]`` taken
    as -1). ``out`` has room for ``len(data) + len(text)`` bytes (each line's
    line break becomes the comma). Returns the bytes written.
    """
    o = 0
    s = 0
    t = 0
    for i in range(content_end.shape[0]):
        e = content_end[i]
        for j in range(s, e):
            out[o] = data[j]
            o += 1
        out[o] = 44
        o += 1
        te = line_end[i]
        for j in range(t, te):
            out[o] = text[j]
            o += 1
        t = te + 1
        s = e
    for j in range(s, data.shape[0]):
        out[o] = data[j]
        o += 1
    return o
