"""eeb_sut.py - the exec protocol's client in Python: a team's system under
test as a program (eeb run --backend 'exec:python3 team.py').

The standard library alone, Python 3.7 or later, so that it runs on a
board's own Python (PYNQ).  Copy this file beside your program and write
a class with the calls of sut/eeb_sut.h as methods:

    import eeb_sut

    class Team:
        name = "team"                       # short, for messages and the record
        version = "1.4.2"                   # optional: the SUT's own, for the record
        def open(self, setup): ...          # a Setup; raise to refuse it
        def load_model(self, path): ...
        def train(self, batch): ...         # a Batch with labels or boxes -> Step
        def predict(self, batch): ...       # a Batch of pixels alone -> one answer an item

    if __name__ == "__main__":
        eeb_sut.serve(Team())

open, load_model, train and predict are required.  end_training(self),
counters(self) -> Counters, save_model(self, path) and close(self) are
optional: a class without one is not asked for it.

serve() reads a request frame from stdin, calls the method, and writes
the reply frame to stdout, until close (or the end of stdin).  An
exception a method raises becomes an error reply with its message, which
eeb shows naming the SUT and the call (raise ValueError to refuse
something; any other exception's traceback goes to stderr as well).
Stdout carries the protocol alone: while serving, print() and
sys.stdout go to stderr, so a stray print cannot break a frame.

Every path a method is given is a file on this machine, wherever eeb
runs: eeb sends the model's and the xclbin's bytes, and serve() writes
them to a temporary directory of its own (removed at the end) and hands
the methods that copy; save_model writes to a temporary path, whose bytes
go back to eeb.  setup.workdir is eeb's if it is a directory here, else a
temporary one.  So a program reached over ssh on a board works as one
beside eeb.

What predict returns, one entry an item:
  cls, video  a list of exactly top_k (class, score) pairs, best first
              (class -1 for ranks past the classes, if top_k exceeds them)
  det         a list of at most max_boxes (class, score, x0, y0, x1, y1)
              detections, best first, corners in pixels of the item

The frames (docs/sut.md, "Out of process: the exec protocol"; the same
numbers as sut/eeb_sut_exec.h): a 16-byte header (b"EEBS", version u16,
call u16, id u32, payload length u32, little-endian) and the payload; a
reply's payload is a u32 status (0), then the call's results, or a
non-zero status and a string (u32 length, UTF-8) saying why.
"""

import os
import shutil
import struct
import sys
import tempfile
import traceback

MAGIC = b"EEBS"
VERSION = 1
HEADER = struct.Struct("<4sHHII")
MAX_PAYLOAD = 256 << 20
MAX_TEXT = 65536

OPEN, LOAD_MODEL, TRAIN, END_TRAINING, PREDICT, COUNTERS, SAVE_MODEL, CLOSE = range(1, 9)
CALL_NAMES = {OPEN: "open", LOAD_MODEL: "load_model", TRAIN: "train",
              END_TRAINING: "end_training", PREDICT: "predict", COUNTERS: "counters",
              SAVE_MODEL: "save_model", CLOSE: "close"}
HAS_END_TRAINING, HAS_COUNTERS, HAS_SAVE_MODEL = 1, 2, 4
MAX_NAME = MAX_VERSION = 255  # bytes of open's reply's name and version

CLS, DET, VIDEO = 0, 1, 2
ABI_VERSION = 2  # sut/eeb_sut.h's EEB_SUT_ABI_VERSION: eeb's setup says its own

SETUP = struct.Struct("<10iQ")       # open: the setup's numbers
BOX = struct.Struct("<ii4f")         # cls, difficult, x0 y0 x1 y1
DETECTION = struct.Struct("<if4f")   # cls, score, x0 y0 x1 y1
STEP = struct.Struct("<dqqB")        # loss, correct, counted, done
COUNTERS_HEAD = struct.Struct("<6Q")  # steps, items, saturations[4]


class ProtocolError(Exception):
    """The harness sent what is not a request of this protocol."""


class Setup(object):
    """What open is given (struct eeb_sut_setup)."""
    FIELDS = ("abi_version", "task", "classes", "frames", "height", "width", "channels",
              "batch_max", "top_k", "max_boxes", "seed")

    def __init__(self, values, config, workdir, xclbin):
        for key, value in zip(self.FIELDS, values):
            setattr(self, key, value)
        self.config = config
        self.workdir = workdir
        self.xclbin = xclbin  # the design to program the device with, or ""
        self.item_bytes = self.frames * self.height * self.width * self.channels

    def __repr__(self):
        return "Setup(%s, config=%r, workdir=%r, xclbin=%r)" % (
            ", ".join("%s=%r" % (k, getattr(self, k)) for k in self.FIELDS), self.config,
            self.workdir, self.xclbin)


class Box(object):
    """A ground-truth box (det), in pixels of the item."""
    __slots__ = ("cls", "difficult", "x0", "y0", "x1", "y1")

    def __init__(self, cls, difficult, x0, y0, x1, y1):
        self.cls, self.difficult = cls, difficult
        self.x0, self.y0, self.x1, self.y1 = x0, y0, x1, y1


class Batch(object):
    """n items: pixels (bytes, items one after another, each frames x height
    x width x channels, RGB); labels (cls, video: n ints) or boxes (det: a
    list of n lists of Box) when training, None when predicting."""

    def __init__(self, n, pixels, item_bytes, labels=None, boxes=None):
        self.n = n
        self.pixels = pixels
        self.item_bytes = item_bytes
        self.labels = labels
        self.boxes = boxes

    def item(self, i):
        """Item i's pixels (a memoryview, no copy)."""
        return memoryview(self.pixels)[i * self.item_bytes:(i + 1) * self.item_bytes]


class Step(object):
    """What train reports: the batch's mean loss (float('nan') if none),
    correct of counted targets (0 of 0 if not counted), done (True: no
    more batches wanted)."""

    def __init__(self, loss=float("nan"), correct=0, counted=0, done=False):
        self.loss, self.correct, self.counted, self.done = loss, correct, counted, done


class Counters(object):
    """What the device did: steps and items trained, fixed-point
    saturations (activations, errors, gradients, weights), a line of
    detail (at most 63 bytes are kept)."""

    def __init__(self, steps=0, items=0, saturations=(0, 0, 0, 0), detail=""):
        self.steps, self.items = steps, items
        self.saturations = tuple(saturations)
        self.detail = detail


# ---- frames ----

def _read_exact(stream, n):
    """n bytes, or None at the end of the stream before any; a frame cut
    short is a ProtocolError."""
    parts, got = [], 0
    while got < n:
        chunk = stream.read(n - got)
        if not chunk:
            if got == 0:
                return None
            raise ProtocolError("the stream ended %d bytes into %d" % (got, n))
        parts.append(chunk)
        got += len(chunk)
    return b"".join(parts)


def read_frame(stream):
    """(call, id, payload) of the next frame, or None at the end of stdin."""
    head = _read_exact(stream, HEADER.size)
    if head is None:
        return None
    magic, version, call, ident, length = HEADER.unpack(head)
    if magic != MAGIC:
        raise ProtocolError("a frame starting %r, not the magic %r" % (magic, MAGIC))
    if version != VERSION:
        raise ProtocolError("protocol version %d, this client speaks %d" % (version, VERSION))
    if length > MAX_PAYLOAD:
        raise ProtocolError("a payload of %d bytes, over the cap of %d" % (length, MAX_PAYLOAD))
    payload = _read_exact(stream, length) if length else b""
    if payload is None:
        raise ProtocolError("the stream ended before a payload of %d bytes" % length)
    return call, ident, payload


def write_frame(stream, call, ident, payload):
    """One frame, whole (an unbuffered stdout, python3 -u, may take part of a
    write), flushed."""
    data = memoryview(HEADER.pack(MAGIC, VERSION, call, ident, len(payload)) + payload)
    while data:
        n = stream.write(data)
        data = data[len(data) if n is None else n:]
    stream.flush()


def _string(text):
    data = text.encode("utf-8")
    if len(data) > MAX_TEXT:
        data = data[:MAX_TEXT]
    return struct.pack("<I", len(data)) + data


def _short(text, most):
    """text's first most bytes of UTF-8, cut between characters."""
    return text.encode("utf-8")[:most].decode("utf-8", "ignore")


class _Reader(object):
    """Fields out of a request's payload, in order."""

    def __init__(self, payload):
        self.data, self.at = payload, 0

    def take(self, n):
        if self.at + n > len(self.data):
            raise ProtocolError("a payload of %d bytes, cut short" % len(self.data))
        chunk = self.data[self.at:self.at + n]
        self.at += n
        return chunk

    def unpack(self, fmt):
        return fmt.unpack(self.take(fmt.size))

    def ints(self, n):
        return list(struct.unpack("<%di" % n, self.take(4 * n)))

    def string(self):
        (n,) = struct.unpack("<I", self.take(4))
        if n > MAX_TEXT:
            raise ProtocolError("a string of %d bytes" % n)
        return self.take(n).decode("utf-8", "replace")

    def file_bytes(self):
        (n,) = struct.unpack("<Q", self.take(8))
        return self.take(n)

    def end(self):
        if self.at != len(self.data):
            raise ProtocolError("%d bytes after the request's fields" % (len(self.data) - self.at))


# ---- the calls ----

class _Server(object):
    def __init__(self, sut):
        self.sut = sut
        self.setup = None
        self.tmp = None  # this machine's directory for the files eeb sends, once made

    def _tmp(self):
        if self.tmp is None:
            self.tmp = tempfile.mkdtemp(prefix="eeb-sut-")
        return self.tmp

    def _local(self, eeb_path, data, prefix=""):
        """A file of data here, named as eeb's (the SUT's messages then name
        a file the team knows): its path."""
        path = os.path.join(self._tmp(), prefix + (os.path.basename(eeb_path) or "file"))
        with open(path, "wb") as f:
            f.write(data)
        return path

    def cleanup(self):
        """Removes this machine's temporary files."""
        if self.tmp is not None:
            shutil.rmtree(self.tmp, ignore_errors=True)
            self.tmp = None

    def open(self, r):
        values = r.unpack(SETUP)
        config, workdir, xclbin = r.string(), r.string(), r.string()
        design = r.file_bytes()
        r.end()
        if not os.path.isdir(workdir):  # eeb's is on another machine
            workdir = os.path.join(self._tmp(), "workdir")
            if not os.path.isdir(workdir):
                os.mkdir(workdir)
        if xclbin:
            xclbin = self._local(xclbin, design)
        setup = Setup(values, config, workdir, xclbin)
        self.sut.open(setup)
        self.setup = setup  # only once open took it: no batch reaches a SUT that refused
        name = str(getattr(self.sut, "name", "") or type(self.sut).__name__)
        has = 0
        for method, bit in (("end_training", HAS_END_TRAINING), ("counters", HAS_COUNTERS),
                            ("save_model", HAS_SAVE_MODEL)):
            if callable(getattr(self.sut, method, None)):
                has |= bit
        reply = _string(_short(name, MAX_NAME)) + struct.pack("<I", has)
        # optional: none, none sent; nor to an eeb older than ABI version 2,
        # whose open reply has no room for it
        version = getattr(self.sut, "version", None)
        if version and setup.abi_version >= 2:
            reply += _string(_short(str(version), MAX_VERSION))
        return reply

    def _batch(self, r, labelled):
        if self.setup is None:
            raise ProtocolError("a batch before open")
        (n,) = struct.unpack("<i", r.take(4))
        if n < 1 or n > self.setup.batch_max:
            raise ValueError("a batch of %d items (1..%d)" % (n, self.setup.batch_max))
        pixels = r.take(n * self.setup.item_bytes)
        batch = Batch(n, pixels, self.setup.item_bytes)
        if labelled and self.setup.task == DET:
            counts = r.ints(n)
            batch.boxes = []
            for count in counts:
                if count < 0:
                    raise ValueError("%d boxes in an item" % count)
                batch.boxes.append([Box(*BOX.unpack(r.take(BOX.size))) for _ in range(count)])
        elif labelled:
            batch.labels = r.ints(n)
        r.end()
        return batch

    def load_model(self, r):
        path, data = r.string(), r.file_bytes()
        r.end()
        self.sut.load_model(self._local(path, data))
        return b""

    def save_model(self, r):
        path = os.path.join(self._tmp(), "saved-" + (os.path.basename(r.string()) or "model"))
        r.end()
        try:
            self.sut.save_model(path)
            if not os.path.isfile(path):
                raise ValueError("save_model wrote no file")
            with open(path, "rb") as f:
                data = f.read()
        finally:
            if os.path.exists(path):
                os.remove(path)
        if len(data) > MAX_PAYLOAD - 12:
            raise ValueError("a model of %d bytes, over the protocol's cap" % len(data))
        return struct.pack("<Q", len(data)) + data

    def train(self, r):
        step = self.sut.train(self._batch(r, True))
        if step is None:
            step = Step()
        return STEP.pack(float(step.loss), int(step.correct), int(step.counted),
                         1 if step.done else 0)

    def end_training(self, r):
        r.end()
        self.sut.end_training()
        return b""

    def predict(self, r):
        batch = self._batch(r, False)
        answers = list(self.sut.predict(batch))
        s = self.setup
        if len(answers) != batch.n:
            raise ValueError("predict answered %d items of %d" % (len(answers), batch.n))
        out = [struct.pack("<i", batch.n)]
        if s.task == DET:
            counts, dets = [], []
            for i, item in enumerate(answers):
                item = list(item)
                if len(item) > s.max_boxes:
                    raise ValueError("item %d: %d detections (max_boxes %d)"
                                     % (i, len(item), s.max_boxes))
                counts.append(len(item))
                dets.extend(DETECTION.pack(int(d[0]), *[float(v) for v in d[1:6]]) for d in item)
            out.append(struct.pack("<%di" % batch.n, *counts))
            out.extend(dets)
        else:
            classes, scores = [], []
            for i, item in enumerate(answers):
                item = list(item)
                if len(item) != s.top_k:
                    raise ValueError("item %d: %d ranked classes, top_k is %d"
                                     % (i, len(item), s.top_k))
                classes.extend(int(c) for c, _ in item)
                scores.extend(float(v) for _, v in item)
            out.append(struct.pack("<%di" % len(classes), *classes))
            out.append(struct.pack("<%df" % len(scores), *scores))
        return b"".join(out)

    def counters(self, r):
        r.end()
        c = self.sut.counters() or Counters()
        sat = (tuple(c.saturations) + (0, 0, 0, 0))[:4]
        detail = c.detail.encode("utf-8")[:63].decode("utf-8", "ignore")
        return COUNTERS_HEAD.pack(int(c.steps), int(c.items), *[int(v) for v in sat]) + \
            _string(detail)

    def close(self, r):
        r.end()
        if callable(getattr(self.sut, "close", None)):
            self.sut.close()
        self.cleanup()
        return b""


_HANDLERS = {OPEN: "open", LOAD_MODEL: "load_model", TRAIN: "train",
             END_TRAINING: "end_training", PREDICT: "predict", COUNTERS: "counters",
             SAVE_MODEL: "save_model", CLOSE: "close"}


def serve(sut, stdin=None, stdout=None):
    """Answers eeb's requests with sut's methods until close or the end of
    stdin.  Returns 0 (for sys.exit); a request this client cannot read
    ends it with 1, saying why on stderr."""
    stdin = stdin or sys.stdin.buffer
    stdout = stdout or sys.stdout.buffer
    sys.stdout = sys.stderr  # stdout is the protocol's: a print goes to stderr
    server = _Server(sut)
    try:
        return _serve(server, stdin, stdout)
    finally:
        server.cleanup()


def _serve(server, stdin, stdout):
    while True:
        try:
            frame = read_frame(stdin)
        except ProtocolError as e:
            sys.stderr.write("eeb_sut: %s\n" % e)
            return 1
        if frame is None:
            return 0
        call, ident, payload = frame
        if call not in _HANDLERS:
            sys.stderr.write("eeb_sut: call %d is none of this protocol's\n" % call)
            return 1
        try:
            body = struct.pack("<I", 0) + getattr(server, _HANDLERS[call])(_Reader(payload))
        except ProtocolError as e:
            sys.stderr.write("eeb_sut: %s: %s\n" % (CALL_NAMES[call], e))
            return 1
        except Exception as e:  # the SUT's own failure: an error reply
            reason = str(e) or type(e).__name__
            if isinstance(e, ValueError):  # a refusal, its reason is the message
                sys.stderr.write("eeb_sut: %s: %s\n" % (CALL_NAMES[call], reason))
            else:  # a bug: where it is
                traceback.print_exc(file=sys.stderr)
            body = struct.pack("<I", 1) + _string(reason.replace("\n", " "))
        write_frame(stdout, call, ident, body)
        if call == CLOSE:
            return 0
