#!/usr/bin/env python3
"""exec_fault.py MODE [PIDFILE [HIDDEN]] - a SUT program that breaks the exec
protocol one way (tests/sut/test_exec.c): it answers as a small stub does
until the call MODE breaks, then does what MODE says.  PIDFILE, if given,
gets its process id first, so a test can see that eeb killed and reaped it.

  ok         a well-behaved stub (config "refuse": open refuses); its
             counters' detail names the setup's xclbin and its size; its
             open reply ends after the optional calls (no version)
  versioned  the stub with a version, "0.9-" ESC "rc1", in its open reply
  longversion  open: a reply whose version is 256 bytes (255 at most)
  cutversion   open: a reply whose version says 9 bytes and has 4
  exit3      train: closes its stdin having read the request's header
             alone, and exits 3
  segv       train: reads the request, then dies of SIGSEGV
  hang       train: reads the request, never answers
  garbage    train: answers bytes that are no frame
  magic      train: a reply whose magic is "EEBX"
  version    train: a reply of protocol version 2
  oversized  train: a reply header of length 0xffffffff
  wrongid    train: a reply with the next request's id
  early      writes to stdout before reading anything (output before input)
  short      predict: answers one item fewer than asked
  lateshort  the same, once it has trained (eeb run's training audit before
             the fine-tune is answered whole, the one after it is not)
  badclass   predict: ranks class `classes` (one past the last) first
  manyboxes  predict: answers max_boxes + 1 detections for item 0
  badstep    train: correct > counted
  noclose    close: neither answers nor exits (ignores the end of stdin)
  nostdout   train: closes its stdout and sleeps
  remote     a stub on "another machine": HIDDEN, eeb's directory, is not
             there for it (open() and os.stat() of a path under it fail);
             its counters' detail names what it was handed: "remote
             model N bytes HASH, NAME N bytes, workdir" (HASH: the first 8
             hex digits of the bytes' SHA-256; the xclbin's name and size;
             workdir if setup.workdir is a directory), and save_model
             writes the model it loaded followed by "saved\n"
"""

import builtins
import hashlib
import os
import signal
import struct
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "sut",
                                "examples"))
import eeb_sut  # noqa: E402


class Stub(object):
    name = "stub"

    def open(self, setup):
        if setup.config == "refuse":
            raise ValueError("setup: refused, as asked")
        self.s = setup
        self.steps = 0

    def load_model(self, path):
        pass

    def train(self, batch):
        self.steps += 1
        return eeb_sut.Step(0.5, 0, 0, False)

    def predict(self, batch):
        s = self.s
        if s.task == eeb_sut.DET:
            return [[(0, 0.5, 0.0, 0.0, 1.0, 1.0)] for _ in range(batch.n)]
        return [[(k % s.classes, 1.0 / (1 + k)) for k in range(s.top_k)] for _ in range(batch.n)]

    def counters(self):
        design = ""
        if self.s.xclbin:
            design = " %s %d bytes" % (os.path.basename(self.s.xclbin),
                                       os.path.getsize(self.s.xclbin))
        return eeb_sut.Counters(self.steps, 0, detail="stub" + design)

    def close(self):
        pass


class VersionedStub(Stub):
    version = "0.9-\x1brc1"


class RemoteStub(Stub):
    """The remote mode's: what it was handed, reported; the model saved."""
    model = b""

    def load_model(self, path):
        with open(path, "rb") as f:
            self.model = f.read()

    def save_model(self, path):
        with open(path, "wb") as f:
            f.write(self.model + b"saved\n")

    def counters(self):
        c = Stub.counters(self)
        c.detail = "remote model %d bytes %s,%s%s" % (
            len(self.model), hashlib.sha256(self.model).hexdigest()[:8], c.detail[len("stub"):],
            ", workdir" if os.path.isdir(self.s.workdir) else "")
        return c


def hide(directory):
    """Paths under directory are not there for this process, as on another
    machine: open() and os.stat() (so os.path.isdir, getsize...) fail."""
    prefix = os.path.abspath(directory) + os.sep
    real_open, real_stat = builtins.open, os.stat

    def under(path):
        return isinstance(path, str) and os.path.abspath(path).startswith(prefix)

    def hidden_open(path, *args, **kwargs):
        if under(path):
            raise FileNotFoundError(2, "not on this machine", path)
        return real_open(path, *args, **kwargs)

    def hidden_stat(path, *args, **kwargs):
        if under(path):
            raise FileNotFoundError(2, "not on this machine", path)
        return real_stat(path, *args, **kwargs)

    builtins.open, os.stat = hidden_open, hidden_stat


def reply(out, call, ident, payload, magic=eeb_sut.MAGIC, version=eeb_sut.VERSION, length=None):
    out.write(eeb_sut.HEADER.pack(magic, version, call, ident,
                                  len(payload) if length is None else length) + payload)
    out.flush()


def broken_predict(mode, server, payload):
    """The predict reply of short, badclass or manyboxes."""
    s = server.setup
    (n,) = struct.unpack_from("<i", payload)
    ok = struct.pack("<I", 0)
    if mode == "short":
        m = (n - 1) * s.top_k
        return ok + struct.pack("<i%di%df" % (m, m), n - 1, *([0] * m + [0.0] * m))
    if mode == "badclass":
        m = n * s.top_k
        classes = [s.classes] + [0] * (m - 1)
        return ok + struct.pack("<i%di%df" % (m, m), n, *(classes + [0.0] * m))
    counts = [s.max_boxes + 1] + [0] * (n - 1)
    dets = eeb_sut.DETECTION.pack(0, 0.5, 0.0, 0.0, 1.0, 1.0) * (s.max_boxes + 1)
    return ok + struct.pack("<i%di" % n, n, *counts) + dets


def main():
    mode = sys.argv[1]
    if len(sys.argv) > 2:
        with open(sys.argv[2], "w") as f:
            f.write("%d\n" % os.getpid())
    stdin, out = sys.stdin.buffer, sys.stdout.buffer
    if mode == "early":
        out.write(b"hello, eeb\n")
        out.flush()
        time.sleep(1)
    if mode == "remote":
        hide(sys.argv[3])
    server = eeb_sut._Server(RemoteStub() if mode == "remote" else
                             VersionedStub() if mode == "versioned" else Stub())
    try:
        return serve(mode, server, stdin, out)
    finally:
        server.cleanup()


def serve(mode, server, stdin, out):
    trained = False
    while True:
        head = eeb_sut._read_exact(stdin, eeb_sut.HEADER.size)
        if head is None:  # eeb closed our stdin
            if mode == "noclose":
                time.sleep(3600)
            return 0
        _, _, call, ident, length = eeb_sut.HEADER.unpack(head)
        if mode == "exit3" and call == eeb_sut.TRAIN:
            os.close(0)  # eeb's next write is EPIPE, while stdout is still open
            time.sleep(0.2)
            os._exit(3)
        payload = eeb_sut._read_exact(stdin, length) if length else b""
        trained |= call == eeb_sut.TRAIN
        if call == eeb_sut.TRAIN and mode in ("segv", "hang", "garbage", "magic", "version",
                                               "oversized", "wrongid", "badstep", "nostdout"):
            if mode == "segv":
                os.kill(os.getpid(), signal.SIGSEGV)
            if mode == "hang":
                time.sleep(3600)
            if mode == "garbage":
                out.write(bytes(range(7, 47)))
                out.flush()
                time.sleep(3600)
            if mode == "nostdout":
                out.close()
                os.close(1)
                time.sleep(3600)
            step = eeb_sut.STEP.pack(0.5, 0, 0, 0)
            if mode == "badstep":
                step = eeb_sut.STEP.pack(0.5, 9, 8, 0)
            reply(out, call, ident + (mode == "wrongid"), struct.pack("<I", 0) + step,
                  magic=b"EEBX" if mode == "magic" else eeb_sut.MAGIC,
                  version=2 if mode == "version" else eeb_sut.VERSION,
                  length=0xFFFFFFFF if mode == "oversized" else None)
            continue
        if call == eeb_sut.OPEN and mode in ("longversion", "cutversion"):
            body = struct.pack("<I", 0) + server.open(eeb_sut._Reader(payload))
            if mode == "longversion":
                body += eeb_sut._string("v" * 256)
            else:
                body += struct.pack("<I", 9) + b"1.2."
            reply(out, call, ident, body)
            continue
        if call == eeb_sut.PREDICT and (mode in ("short", "badclass", "manyboxes") or
                                        (mode == "lateshort" and trained)):
            reply(out, call, ident, broken_predict("short" if mode == "lateshort" else mode, server,
                                                    payload))
            continue
        if call == eeb_sut.CLOSE and mode == "noclose":
            signal.signal(signal.SIGTERM, signal.SIG_IGN)
            time.sleep(3600)
        try:
            body = struct.pack("<I", 0) + getattr(server, eeb_sut._HANDLERS[call])(
                eeb_sut._Reader(payload))
        except ValueError as e:
            body = struct.pack("<I", 1) + eeb_sut._string(str(e))
        reply(out, call, ident, body)
        if call == eeb_sut.CLOSE:
            return 0


if __name__ == "__main__":
    sys.exit(main())
