#!/usr/bin/env python3
"""nearest_mean.py - an example system under test as a program, in Python
with the standard library alone: the nearest-class-mean learner of
sut/examples/nearest_mean.c, served over the exec protocol by eeb_sut.py.

    eeb run --task cls --finetune ft.eebd --test test.eebd \\
            --model nearest_mean.model \\
            --backend 'exec:python3 sut/examples/nearest_mean.py'

It learns what the C example learns and reads and writes the same model
files ("nearest-mean 1", docs/sut.md); its sums are Python floats
(doubles) where the C example's are float32, so the two rank alike but
their scores differ in the last digits.

  features  each frame cut into grid x grid cells, the mean of each
            channel over each cell, 0..1: frames x grid x grid x channels
            numbers an item
  train     cls, video: the item's features join the running mean of its
            label; det: the image's join the mean of each class it has a
            (not difficult) box of, each box its class's mean box.  The
            loss is the mean squared distance from each target to its
            class's mean before it joined (NaN if none had a mean)
  predict   classes ranked by that distance, score 1 / (1 + distance);
            classes never seen after every seen one, in an order drawn
            from the seed, score 0.  det: the nearest seen classes, at
            most max_boxes, each as its mean box

Config (key=value, separated by commas or spaces): grid=N (1..32, default
4), steps=N (report done after N steps; 0, the default: never).
"""

import math
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import eeb_sut  # noqa: E402  (beside this file)

MAGIC = "nearest-mean 1"
TASK_NAMES = {eeb_sut.CLS: "cls", eeb_sut.DET: "det", eeb_sut.VIDEO: "video"}
MASK64 = (1 << 64) - 1


def splitmix64(state):
    """(the next number, the new state): the C example's sequence."""
    state = (state + 0x9E3779B97F4A7C15) & MASK64
    z = state
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK64
    return z ^ (z >> 31), state


class NearestMean(object):
    name = "nearest-mean-py"
    version = "1.1"  # the example's own, recorded beside its name

    def open(self, setup):
        if setup.abi_version < eeb_sut.ABI_VERSION:
            raise ValueError("setup: ABI version %d, older than this SUT's %d"
                             % (setup.abi_version, eeb_sut.ABI_VERSION))
        if setup.task not in TASK_NAMES:
            raise ValueError("setup: task %d (0 cls, 1 det, 2 video)" % setup.task)
        if setup.channels not in (1, 3):
            raise ValueError("setup: %d channels (1 or 3)" % setup.channels)
        if setup.top_k < 1:
            raise ValueError("setup: top_k %d (at least 1)" % setup.top_k)
        if setup.task == eeb_sut.DET and setup.max_boxes < 1:
            raise ValueError("setup: max_boxes %d (at least 1)" % setup.max_boxes)
        self.s = setup
        self.grid, self.steps_max = 4, 0
        for token in re.split(r"[,\s]+", setup.config.strip()):
            if token:
                self._setting(token)
        self.grid = min(self.grid, setup.height, setup.width)
        self.dim = setup.frames * self.grid * self.grid * setup.channels
        self.steps = self.items = 0
        self._forget()
        perm, state = list(range(setup.classes)), setup.seed
        for k in range(setup.classes - 1, 0, -1):
            value, state = splitmix64(state)
            j = value % (k + 1)
            perm[k], perm[j] = perm[j], perm[k]
        self.order = [0] * setup.classes
        for place, k in enumerate(perm):
            self.order[k] = place

    def _setting(self, token):
        key, eq, value = token.partition("=")
        if not eq:
            raise ValueError("config: '%s' is not key=value (grid=N, steps=N)" % token)
        if key not in ("grid", "steps"):
            raise ValueError("config: unknown key in '%s' (grid, steps)" % token)
        try:
            v = int(value)
        except ValueError:
            v = -1
        if key == "grid" and not 1 <= v <= 32:
            raise ValueError("config: %s (grid=N, N 1..32)" % token)
        if key == "steps" and v < 0:
            raise ValueError("config: %s (steps=N, N >= 0; 0: never done)" % token)
        if key == "grid":
            self.grid = v
        else:
            self.steps_max = v

    def _forget(self):
        k = self.s.classes
        self.seen = [0] * k        # items (det: images) in each class's mean
        self.nboxes = [0] * k      # det: boxes in each class's mean box
        self.means = [None] * k    # a list of dim floats once seen
        self.box = [[0.0] * 4 for _ in range(k)]

    # ---- features and ranks ----

    def features(self, item):
        s, g = self.s, self.grid
        h, w, c = s.height, s.width, s.channels
        frame = h * w * c
        out = []
        for f in range(s.frames):
            base = f * frame
            for gy in range(g):
                y0, y1 = gy * h // g, (gy + 1) * h // g
                for gx in range(g):
                    x0, x1 = gx * w // g, (gx + 1) * w // g
                    area = 255.0 * (y1 - y0) * (x1 - x0)
                    for ch in range(c):
                        total = 0
                        for y in range(y0, y1):
                            row = base + (y * w + x0) * c + ch
                            total += sum(item[row:row + (x1 - x0) * c:c])
                        out.append(total / area)
        return out

    def distance(self, feat, k):
        mean = self.means[k]
        return sum((a - b) * (a - b) for a, b in zip(feat, mean)) / self.dim

    def rank(self, feat, want):
        """The best `want` classes, best first, with their distances."""
        dist = [self.distance(feat, k) if self.seen[k] else 0.0 for k in range(self.s.classes)]
        key = (lambda k: (0, dist[k], self.order[k]) if self.seen[k] else (1, 0.0, self.order[k]))
        return sorted(range(self.s.classes), key=key)[:want], dist

    def score(self, k, dist):
        return 1.0 / (1.0 + dist[k]) if self.seen[k] else 0.0

    # ---- the calls ----

    def load_model(self, path):
        k, dim = self.s.classes, self.dim
        seen, nboxes, means, box = [0] * k, [0] * k, [None] * k, [[0.0] * 4 for _ in range(k)]
        shaped = False
        with open(path) as f:
            lines = f.read().splitlines()
        if not lines:
            raise ValueError("%s: empty (a model starts with '%s')" % (path, MAGIC))
        for no, line in enumerate(lines, 1):
            fields = line.split()
            if no == 1:
                if line != MAGIC:
                    raise ValueError("%s line 1: not a nearest-mean model (want '%s')"
                                     % (path, MAGIC))
            elif fields[:1] == ["shape"]:
                want = [TASK_NAMES[self.s.task], str(k), str(self.s.frames), str(self.grid),
                        str(self.s.channels)]
                if fields[1:] != want:
                    raise ValueError("%s line %d: a model of shape %s, this setup is %s"
                                     % (path, no, " ".join(fields[1:]), " ".join(want)))
                shaped = True
            elif fields[:1] == ["class"]:
                if not shaped:
                    raise ValueError("%s line %d: a class before the shape line" % (path, no))
                try:
                    c, n, m = int(fields[1]), int(fields[2]), int(fields[3])
                    values = [float(v) for v in fields[4:]]
                except (ValueError, IndexError):
                    raise ValueError("%s line %d: not 'class K N M X0 Y0 X1 Y1 V1 ... VD'"
                                     % (path, no))
                if not 0 <= c < k or seen[c] or n < 1 or m < 0 or len(values) != 4 + dim or \
                        not all(math.isfinite(v) for v in values):
                    raise ValueError("%s line %d: class %d needs 0..%d, once, N >= 1 and %d "
                                     "numbers" % (path, no, c, k - 1, 4 + dim))
                seen[c], nboxes[c], box[c], means[c] = n, m, values[:4], values[4:]
            elif line.strip():
                raise ValueError("%s line %d: not a shape or class line" % (path, no))
        self.seen, self.nboxes, self.means, self.box = seen, nboxes, means, box

    def save_model(self, path):
        s = self.s
        with open(path, "w") as f:
            f.write("%s\nshape %s %d %d %d %d\n" % (MAGIC, TASK_NAMES[s.task], s.classes,
                                                    s.frames, self.grid, s.channels))
            for k in range(s.classes):
                if self.seen[k]:
                    f.write("class %d %d %d %s\n" % (
                        k, self.seen[k], self.nboxes[k],
                        " ".join("%.9g" % v for v in self.box[k] + self.means[k])))

    def _join(self, k, feat):
        self.seen[k] += 1
        if self.means[k] is None:
            self.means[k] = list(feat)
        else:
            n, mean = self.seen[k], self.means[k]
            for i, v in enumerate(feat):
                mean[i] += (v - mean[i]) / n

    def _check(self, batch):
        s = self.s
        for i in range(batch.n):
            if s.task != eeb_sut.DET:
                if not 0 <= batch.labels[i] < s.classes:
                    raise ValueError("item %d: label %d (0..%d)"
                                     % (i, batch.labels[i], s.classes - 1))
                continue
            for j, b in enumerate(batch.boxes[i]):
                if not 0 <= b.cls < s.classes:
                    raise ValueError("item %d box %d: class %d (0..%d)"
                                     % (i, j, b.cls, s.classes - 1))
                if not (0 <= b.x0 <= b.x1 <= s.width and 0 <= b.y0 <= b.y1 <= s.height):
                    raise ValueError("item %d box %d: (%g, %g)-(%g, %g) is not a box in the "
                                     "%d x %d image" % (i, j, b.x0, b.y0, b.x1, b.y1, s.width,
                                                       s.height))

    def train(self, batch):
        s = self.s
        if self.steps_max and self.steps >= self.steps_max:
            raise ValueError("a batch after done (steps=%d)" % self.steps_max)
        self._check(batch)
        loss, losses, correct = 0.0, 0, 0
        for i in range(batch.n):
            feat = self.features(batch.item(i))
            if s.task != eeb_sut.DET:
                label = batch.labels[i]
                ranked, dist = self.rank(feat, 1)
                if self.seen[label]:
                    loss += dist[label]
                    losses += 1
                correct += ranked[0] == label
                self._join(label, feat)
                continue
            inside = set()
            for b in batch.boxes[i]:
                if b.difficult:
                    continue
                rel = [b.x0 / s.width, b.y0 / s.height, b.x1 / s.width, b.y1 / s.height]
                self.nboxes[b.cls] += 1
                mean = self.box[b.cls]
                for j in range(4):
                    mean[j] += (rel[j] - mean[j]) / self.nboxes[b.cls]
                inside.add(b.cls)
            for k in sorted(inside):
                if self.seen[k]:
                    loss += self.distance(feat, k)
                    losses += 1
                self._join(k, feat)
        self.steps += 1
        self.items += batch.n
        det = s.task == eeb_sut.DET
        return eeb_sut.Step(loss / losses if losses else float("nan"),
                            0 if det else correct, 0 if det else batch.n,
                            bool(self.steps_max and self.steps >= self.steps_max))

    def predict(self, batch):
        s = self.s
        answers = []
        for i in range(batch.n):
            feat = self.features(batch.item(i))
            if s.task == eeb_sut.DET:
                ranked, dist = self.rank(feat, min(s.max_boxes, s.classes))
                dets = []
                for k in ranked:
                    if not self.seen[k]:
                        break
                    b = self.box[k]
                    x0 = min(max(b[0] * s.width, 0.0), s.width)
                    y0 = min(max(b[1] * s.height, 0.0), s.height)
                    x1 = min(max(b[2] * s.width, x0), s.width)
                    y1 = min(max(b[3] * s.height, y0), s.height)
                    dets.append((k, self.score(k, dist), x0, y0, x1, y1))
                answers.append(dets)
                continue
            ranked, dist = self.rank(feat, min(s.top_k, s.classes))
            item = [(k, self.score(k, dist)) for k in ranked]
            answers.append(item + [(-1, 0.0)] * (s.top_k - len(item)))
        return answers

    def counters(self):
        return eeb_sut.Counters(self.steps, self.items, detail="nearest-mean (Python), %dx%d grid"
                                % (self.grid, self.grid))

    def close(self):
        pass


if __name__ == "__main__":
    sys.exit(eeb_sut.serve(NearestMean()))
