"""The :class:`fastcal._engine.Rows` of out-of-core data (:class:`FileRows`): chunks streamed from a source,
partitions in temporary files."""

from __future__ import annotations

import os
import shutil
import tempfile

import numpy as np

from .._engine import bind_chunk, split_chunk

__all__ = ["FileRows"]


class _PartitionFiles:
    """Append-only files, one per column and partition, in a temporary directory; removed by :meth:`cleanup`."""

    def __init__(self, n_parts, dtypes, tmpdir):
        self.dir = tempfile.mkdtemp(prefix="fastcal-partitions-", dir=tmpdir)
        self.n_parts = n_parts
        self.dtypes = dtypes  # one per column, None for a column of None
        self.rows = np.zeros(n_parts, dtype=np.int64)
        self.users = 1

    def _path(self, j, k):
        return os.path.join(self.dir, f"part{j:06d}.{k}")

    def append(self, j, arrays):
        m = arrays[0].shape[0]
        if not m:
            return
        for k, a in enumerate(arrays):
            if a is None:
                continue
            with open(self._path(j, k), "ab") as f:
                np.ascontiguousarray(a).tofile(f)
        self.rows[j] += m

    def read(self, j):
        if not self.rows[j]:
            return None
        return tuple(None if dtype is None else np.fromfile(self._path(j, k), dtype=dtype)
                     for k, dtype in enumerate(self.dtypes))

    def cleanup(self):
        self.users -= 1
        if self.users <= 0:
            shutil.rmtree(self.dir, ignore_errors=True)


def _apply(chunk, fns, number):
    for fn, args in fns:
        chunk = fn(chunk, *bind_chunk(args, number))[0]
    return chunk


class FileRows:
    """The :class:`fastcal._engine.Rows` of out-of-core data: chunks streamed, partitions in temporary files.

    Chunks are read from a :class:`Columns` source on every pass (one at a
    time: memory holds one chunk); ``convert`` returns rows whose chunks are
    the source's, converted again on every pass. ``partition`` is one pass
    that appends every chunk's rows of each key range to that range's files
    (an external bucket sort, in ``tmpdir``); a partition is read whole when
    a pass reaches it, so it must fit in memory (the fits size them from the
    memory budget). Re-cutting partitioned rows rewrites only the partitions
    a moved bound falls in; the others are kept as they are. ``release``
    removes the files; so does an error or a signal inside ``partition``.
    """

    parallelism = 1

    def __init__(self, src, tmpdir=None, *, fns=(), parts=None, bounds=None, template=None):
        self.src = src
        self.tmpdir = tmpdir
        self.fns = tuple(fns)
        self.parts = parts  # per partition, the (files, j) it is read from
        self.bounds = bounds
        self.template = template  # empty chunk of the partitions' dtypes
        self.files = [] if parts is None else sorted({id(f): f for ps in parts for f, _ in ps}.values(), key=id)

    @property
    def n_rows(self):
        """The source's rows (known up front) for the raw chunks; None for converted or partitioned ones."""
        return self.src.n if self.parts is None and not self.fns else None

    def _raw(self, skip=()):
        if self.parts is None:
            yield from self.src.raw_chunks()
            return
        for i, sources in enumerate(self.parts):
            if i in skip:
                yield None
                continue
            pieces = [p for p in (f.read(j) for f, j in sources) if p is not None]
            if not pieces:
                yield self.template
            elif len(pieces) == 1:
                yield pieces[0]
            else:
                yield tuple(None if p[0] is None else np.concatenate(p) for p in zip(*pieces))

    def _chunks(self, skip=()):
        for i, chunk in enumerate(self._raw(skip)):
            yield None if chunk is None else _apply(chunk, self.fns, i)

    def map(self, fn, *args):
        return [fn(c, *bind_chunk(args, i)) for i, c in enumerate(self._chunks())]

    def convert(self, fn, *args):
        facts = [fn(c, *bind_chunk(args, i))[1] for i, c in enumerate(self._chunks())]  # one chunk held at a time
        return self._derived(fns=self.fns + ((fn, args),)), facts

    def _derived(self, **kw):
        for f in self.files:
            f.users += 1
        kw = {"parts": self.parts, "bounds": self.bounds, "template": self.template, **kw}
        return FileRows(self.src, self.tmpdir, **kw)

    def partition(self, bounds, key=0):
        bounds = np.asarray(bounds)
        n_parts = bounds.shape[0] + 1
        whole = {}
        if self.parts is not None and not self.fns and len(self.parts) == self.bounds.shape[0] + 1:
            old = self.bounds
            for i in range(len(self.parts)):
                lo = old[i - 1] if i else -np.inf
                hi = old[i] if i < old.shape[0] else np.inf
                first = int(np.searchsorted(bounds, bounds.dtype.type(lo), side="right"))
                if first == int(np.searchsorted(bounds, bounds.dtype.type(hi), side="left")):
                    whole[i] = first  # every row stays together: its files are kept
        files = None
        template = self.template
        try:
            for chunk in self._chunks(whole):
                if chunk is None:  # a partition kept whole
                    continue
                if files is None:
                    dtypes = tuple(None if c is None else c.dtype for c in chunk)
                    files = _PartitionFiles(n_parts, dtypes, self.tmpdir)
                    template = tuple(None if c is None else c[:0] for c in chunk)
                for j, piece in enumerate(split_chunk(chunk, bounds, key)):
                    files.append(j, piece)
        except BaseException:
            if files is not None:
                files.cleanup()
            raise
        parts = [[] for _ in range(n_parts)]
        kept = {}
        for i, j in whole.items():
            parts[j].extend(self.parts[i])
            kept.update((id(f), f) for f, _ in self.parts[i])
        for f in kept.values():  # now also the new rows' (a FileRows holds one use of each of its files)
            f.users += 1
        if files is not None:
            for j in range(n_parts):
                parts[j].append((files, j))
        return FileRows(self.src, self.tmpdir, parts=parts, bounds=bounds, template=template)

    def release(self):
        files, self.files, self.parts = self.files, [], [[] for _ in (self.parts or ())]
        for f in files:
            f.cleanup()
