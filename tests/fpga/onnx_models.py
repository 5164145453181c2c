#!/usr/bin/python3
"""ONNX models for tests/fpga/test_onnx.c, and what a reference evaluator
makes of them.

Debian 12's python3-onnx (1.12) predates onnx.reference, so the reference
is PyTorch (Debian's python3-torch): a network built in torch and exported
with torch.onnx.export, or an ONNX graph built node by node with
onnx.helper and evaluated with torch.nn.functional on the same weights.
Either way the numbers come from code that is not eeb's.

The input eeb feeds a network is x = max(p - 128, -127) / 128 for each
8-bit pixel p (fpga/net/eeb_onnx.h); pixels are written as uint8 N x H x W
x C (eeb's layout), reference outputs as float32 N x outputs.

  onnx_models.py resnet18 DIR [--size S] [--n N] [--classes K] [--normalize]
  onnx_models.py ops DIR      every operator eeb maps, in one graph
  onnx_models.py bad DIR      one model per thing eeb must refuse
  onnx_models.py check FILE   onnx.checker on a file eeb exported
  onnx_models.py eval FILE DIR  FILE (a model eeb exported) on DIR/pixels.u8,
                              by an evaluator of its own, into DIR/ref.f32

bad and check need python3-onnx alone; the others python3-torch too.
"""
import argparse
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

MEAN = [0.485, 0.456, 0.406]
STD = [0.229, 0.224, 0.225]


def eeb_input(pixels):
    """uint8 N H W C -> float32 N C H W, as eeb reads pixels."""
    x = np.maximum(pixels.astype(np.float32) - 128, -127) / 128
    return np.ascontiguousarray(x.transpose(0, 3, 1, 2))


def pixels_for(n, h, w, c, seed):
    """Smooth random images (blobs of colour), not white noise: a
    network's activations on them look like a photo's."""
    rng = np.random.default_rng(seed)
    coarse = rng.integers(0, 256, size=(n, h // 8 + 2, w // 8 + 2, c)).astype(np.float32)
    ys = np.linspace(0, h // 8 + 1 - 1e-6, h)
    xs = np.linspace(0, w // 8 + 1 - 1e-6, w)
    y0, x0 = ys.astype(int), xs.astype(int)
    fy, fx = (ys - y0)[None, :, None, None], (xs - x0)[None, None, :, None]
    a = coarse[:, y0][:, :, x0]
    b = coarse[:, y0][:, :, x0 + 1]
    cc = coarse[:, y0 + 1][:, :, x0]
    d = coarse[:, y0 + 1][:, :, x0 + 1]
    img = (a * (1 - fx) + b * fx) * (1 - fy) + (cc * (1 - fx) + d * fx) * fy
    img += rng.normal(0, 6, size=img.shape)
    return np.clip(img, 0, 255).astype(np.uint8)


def save_io(d, pixels, ref):
    pixels.tofile(os.path.join(d, "pixels.u8"))
    np.ascontiguousarray(ref, dtype=np.float32).tofile(os.path.join(d, "ref.f32"))


def resnet18(args):
    import torch
    import torch.nn as nn

    torch.manual_seed(args.seed)

    class Block(nn.Module):
        def __init__(self, cin, cout, stride):
            super().__init__()
            self.c1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
            self.b1 = nn.BatchNorm2d(cout)
            self.c2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
            self.b2 = nn.BatchNorm2d(cout)
            self.down = None
            if stride != 1 or cin != cout:
                self.down = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False),
                                          nn.BatchNorm2d(cout))

        def forward(self, x):
            y = torch.relu(self.b1(self.c1(x)))
            y = self.b2(self.c2(y))
            return torch.relu(y + (self.down(x) if self.down is not None else x))

    class ResNet18(nn.Module):
        def __init__(self, classes):
            super().__init__()
            self.stem = nn.Sequential(nn.Conv2d(3, 64, 7, 2, 3, bias=False), nn.BatchNorm2d(64),
                                      nn.ReLU(), nn.MaxPool2d(3, 2, 1))
            blocks, cin = [], 64
            for cout, stride in [(64, 1), (128, 2), (256, 2), (512, 2)]:
                blocks += [Block(cin, cout, stride), Block(cout, cout, 1)]
                cin = cout
            self.blocks = nn.Sequential(*blocks)
            self.pool = nn.AdaptiveAvgPool2d(1)
            self.fc = nn.Linear(512, classes)

        def forward(self, x):
            return self.fc(torch.flatten(self.pool(self.blocks(self.stem(x))), 1))

    net = ResNet18(args.classes)
    s = args.size
    # Running statistics as a trained network has them: measured on images
    # (in training mode, a cumulative mean), with scales and shifts not 1
    # and 0, so that folding them is tested.  Without them a random ResNet's
    # features are nearly the same for every image (2 % apart, 15 % with).
    for m in net.modules():
        if isinstance(m, nn.BatchNorm2d):
            m.weight.data.uniform_(0.5, 1.5)
            m.bias.data.uniform_(-0.1, 0.1)
            m.momentum = None
    net.train()
    with torch.no_grad():
        net(torch.from_numpy(eeb_input(pixels_for(16, s, s, 3, args.seed + 1000))))
    net.eval()
    path = os.path.join(args.dir, "model.onnx")
    with torch.no_grad():
        torch.onnx.export(net, torch.zeros(1, 3, s, s), path, opset_version=13,
                          training=torch.onnx.TrainingMode.PRESERVE, do_constant_folding=False,
                          input_names=["image"], output_names=["logits"],
                          dynamic_axes={"image": {0: "N"}, "logits": {0: "N"}})
        pixels = pixels_for(args.n, s, s, 3, args.seed)
        x = torch.from_numpy(eeb_input(pixels))
        if args.normalize:  # the network takes (p/255 - mean)/std; eeb reads p = 0 as 1
            p = torch.from_numpy(np.ascontiguousarray(np.maximum(pixels, 1).transpose(0, 3, 1, 2)))
            p = p.float()
            m = torch.tensor(MEAN).view(1, 3, 1, 1)
            sd = torch.tensor(STD).view(1, 3, 1, 1)
            x = (p / 255 - m) / sd
        ref = net(x).numpy()
    save_io(args.dir, pixels, ref)


def ops(args):
    """Conv+BN, MatMul+Add, Gemm (alpha, beta, transB 0), AveragePool,
    MaxPool, Concat, Add, Identity, Dropout, Flatten of a 3x3 map (its
    (c, h, w) order), Reshape, a final Softmax; evaluated in torch."""
    import torch
    import torch.nn.functional as F

    rng = np.random.default_rng(args.seed)
    h = w = 12

    def arr(*shape, lo=-0.5, hi=0.5):
        return rng.uniform(lo, hi, size=shape).astype(np.float32)

    t = {
        "w1": arr(8, 3, 3, 3), "b1": arr(8),
        "bn_s": arr(8, lo=0.5, hi=1.5), "bn_b": arr(8), "bn_m": arr(8), "bn_v": arr(8, lo=0.5, hi=2),
        "w2": arr(6, 8, 1, 1),
        "w3": arr(6, 8, 3, 3), "b3": arr(6),
        "mm": arr(12 * 3 * 3, 10), "mm_b": arr(10),
        "g": arr(10, 7), "g_c": arr(7),
        "shape": np.array([0, -1], dtype=np.int64),
    }
    nodes = [
        helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], name="conv1", kernel_shape=[3, 3],
                         pads=[1, 1, 1, 1]),
        helper.make_node("BatchNormalization", ["c1", "bn_s", "bn_b", "bn_m", "bn_v"], ["bn1"],
                         name="bn1", epsilon=1e-3),
        helper.make_node("Relu", ["bn1"], ["r1"], name="relu1"),
        helper.make_node("Identity", ["r1"], ["id1"], name="id1"),
        helper.make_node("Conv", ["id1", "w2"], ["c2"], name="conv2"),  # 1x1, no bias
        helper.make_node("Conv", ["id1", "w3", "b3"], ["c3"], name="conv3", auto_pad="SAME_UPPER"),
        helper.make_node("Concat", ["c2", "c3"], ["cat"], name="cat", axis=1),
        helper.make_node("Add", ["cat", "cat"], ["sum"], name="sum"),
        helper.make_node("AveragePool", ["sum"], ["avg"], name="avg", kernel_shape=[2, 2],
                         strides=[2, 2]),
        helper.make_node("MaxPool", ["avg"], ["max"], name="max", kernel_shape=[3, 3],
                         strides=[2, 2], pads=[1, 1, 1, 1]),
        helper.make_node("Dropout", ["max"], ["drop"], name="drop"),
        helper.make_node("Flatten", ["drop"], ["flat"], name="flat", axis=1),
        helper.make_node("Reshape", ["flat", "shape"], ["flat2"], name="reshape"),
        helper.make_node("MatMul", ["flat2", "mm"], ["mm_out"], name="mm"),
        helper.make_node("Add", ["mm_out", "mm_b"], ["fc1"], name="mm_bias"),
        helper.make_node("Relu", ["fc1"], ["r2"], name="relu2"),
        helper.make_node("Gemm", ["r2", "g", "g_c"], ["logits"], name="gemm", alpha=0.75,
                         beta=1.5),
        helper.make_node("Softmax", ["logits"], ["prob"], name="softmax", axis=1),
    ]
    graph = helper.make_graph(
        nodes, "ops", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 3, h, w])],
        [helper.make_tensor_value_info("prob", TensorProto.FLOAT, ["N", 7])],
        [numpy_helper.from_array(v, k) for k, v in t.items()])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)],
                              producer_name="onnx_models.py")
    onnx.checker.check_model(model)
    onnx.save(model, os.path.join(args.dir, "model.onnx"))

    pixels = pixels_for(args.n, h, w, 3, args.seed)
    T = {k: torch.from_numpy(v) for k, v in t.items()}
    x = torch.from_numpy(eeb_input(pixels))
    y = F.conv2d(x, T["w1"], T["b1"], padding=1)
    y = F.batch_norm(y, T["bn_m"], T["bn_v"], T["bn_s"], T["bn_b"], False, 0.0, 1e-3)
    y = torch.relu(y)
    y = torch.cat([F.conv2d(y, T["w2"]), F.conv2d(y, T["w3"], T["b3"], padding=1)], 1)
    y = F.avg_pool2d(y + y, 2, 2)
    y = F.max_pool2d(y, 3, 2, 1)
    y = torch.flatten(y, 1)
    y = torch.relu(y @ T["mm"] + T["mm_b"])
    ref = (0.75 * (y @ T["g"]) + 1.5 * T["g_c"]).numpy()  # before the softmax, as eeb outputs
    save_io(args.dir, pixels, ref)


def bad(args):
    """Models eeb must refuse, each named after what is wrong with it."""
    rng = np.random.default_rng(args.seed)

    def save(name, nodes, inits, inputs=None, out="y", out_dims=None, opset=13):
        inputs = inputs or [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4, 8, 8])]
        graph = helper.make_graph(
            nodes, name, inputs,
            [helper.make_tensor_value_info(out, TensorProto.FLOAT, out_dims or [1, 4, 8, 8])],
            [numpy_helper.from_array(v, k) for k, v in inits.items()])
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
        onnx.save(model, os.path.join(args.dir, name + ".onnx"))
        return model

    w = rng.uniform(-1, 1, size=(4, 4, 3, 3)).astype(np.float32)
    wg = rng.uniform(-1, 1, size=(4, 2, 3, 3)).astype(np.float32)
    save("grouped", [helper.make_node("Conv", ["x", "wg"], ["y"], name="dw_conv", group=2,
                                      pads=[1, 1, 1, 1])], {"wg": wg})
    save("dilated", [helper.make_node("Conv", ["x", "w"], ["y"], name="atrous",
                                      dilations=[2, 2], pads=[2, 2, 2, 2])], {"w": w})
    save("asymmetric", [helper.make_node("Conv", ["x", "w"], ["y"], name="lopsided",
                                         pads=[0, 0, 2, 2])], {"w": w})
    save("unknown_op", [helper.make_node("Conv", ["x", "w"], ["c"], name="c", pads=[1, 1, 1, 1]),
                        helper.make_node("LeakyRelu", ["c"], ["y"], name="leaky", alpha=0.1)],
         {"w": w})
    save("bn_alone", [helper.make_node("Relu", ["x"], ["r"], name="r"),
                      helper.make_node("BatchNormalization", ["r", "s", "b", "m", "v"], ["y"],
                                       name="lonely_bn")],
         {k: np.ones(4, np.float32) for k in "sbmv"})
    two = [helper.make_tensor_value_info(n, TensorProto.FLOAT, [1, 4, 8, 8]) for n in ("x", "z")]
    save("two_inputs", [helper.make_node("Add", ["x", "z"], ["y"], name="a")], {}, inputs=two)
    m = save("external", [helper.make_node("Conv", ["x", "w"], ["y"], name="c",
                                           pads=[1, 1, 1, 1])], {"w": w})
    onnx.save(m, os.path.join(args.dir, "external.onnx"), save_as_external_data=True,
              all_tensors_to_one_file=True, location="external.bin", size_threshold=0)
    save("ceil_mode", [helper.make_node("MaxPool", ["x"], ["y"], name="ceil_pool",
                                        kernel_shape=[3, 3], strides=[2, 2], ceil_mode=1)], {},
         out_dims=[1, 4, 4, 4])
    save("mid_softmax", [helper.make_node("Conv", ["x", "w"], ["c"], name="c", pads=[1, 1, 1, 1]),
                         helper.make_node("Softmax", ["c"], ["s"], name="inner_softmax", axis=1),
                         helper.make_node("Relu", ["s"], ["y"], name="r")], {"w": w})
    bn = {k: np.ones(4, np.float32) for k in "sbmv"}
    save("bn_training", [helper.make_node("Conv", ["x", "w"], ["c"], name="c", pads=[1, 1, 1, 1]),
                         helper.make_node("BatchNormalization", ["c", "s", "b", "m", "v"], ["y"],
                                          name="training_bn", training_mode=1)],
         dict(w=w, **bn), opset=15)  # training_mode is opset 14's
    save("int_weights", [helper.make_node("Conv", ["x", "wi"], ["y"], name="int_conv",
                                          pads=[1, 1, 1, 1])],
         {"wi": rng.integers(-3, 4, size=(4, 4, 3, 3)).astype(np.int64)})
    wn = w.copy()
    wn[1, 2, 1, 1] = np.nan  # element 58 in OIHW order
    save("nan_weight", [helper.make_node("Conv", ["x", "wn"], ["y"], name="nan_conv",
                                         pads=[1, 1, 1, 1])], {"wn": wn})
    save("zero_stride", [helper.make_node("Conv", ["x", "w"], ["y"], name="still_conv",
                                          strides=[0, 0], auto_pad="SAME_UPPER")], {"w": w})
    with open(os.path.join(args.dir, "deep.onnx"), "wb") as f:
        f.write(deep_model(100000))


def varint(n):
    out = bytearray()
    while n >= 0x80:
        out.append(n & 0x7f | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def deep_model(levels):
    """A ModelProto nested `levels` messages deep: its graph's node holds an
    attribute whose graph's node holds an attribute ... (an If's branch
    holding an If), 4 bytes a level (400 kB for 100000).  Written byte by
    byte: protobuf's Python library will not build it (it stops at 100
    levels), but a reader that unpacks by recursion, as protobuf-c does,
    needs a stack of tens of megabytes for it."""
    fields = [7]  # ModelProto.graph
    while len(fields) < levels:
        fields += [1, 5, 6]  # GraphProto.node, NodeProto.attribute, AttributeProto.g
    fields = fields[:levels]
    inner, prefixes = 0, []
    for f in reversed(fields):  # each message's length is everything inside it
        p = varint(f << 3 | 2) + varint(inner)
        prefixes.append(p)
        inner += len(p)
    head = b"\x08\x07" + b"\x42\x02\x10\x0d"  # ir_version 7; opset_import { version 13 }
    return head + b"".join(reversed(prefixes))


def check(args):
    onnx.checker.check_model(onnx.load(args.file), full_check=True)
    print("onnx.checker: valid")


def evaluate(args):
    """Runs an ONNX file -- the operators eeb's export writes, read as
    the ONNX operator docs define them -- with torch.nn.functional, node by
    node in the file's order, on DIR/pixels.u8 (uint8 N x H x W x C, C the
    input's channels).  Writes the graph's output to DIR/ref.f32 as float32
    in eeb's order: N x K, or a map's N x H x W x C.  An attribute it does
    not know is an error, not a guess."""
    import torch
    import torch.nn.functional as F

    model = onnx.load(args.file)
    g = model.graph
    env = {t.name: torch.from_numpy(numpy_helper.to_array(t).copy()) for t in g.initializer}
    x_info = [i for i in g.input if i.name not in env]
    assert len(x_info) == 1 and len(g.output) == 1, "one input, one output"
    c, h, w = [d.dim_value for d in x_info[0].type.tensor_type.shape.dim[1:]]
    pixels = np.fromfile(os.path.join(args.out, "pixels.u8"), dtype=np.uint8)
    pixels = pixels.reshape(-1, h, w, c)
    env[x_info[0].name] = torch.from_numpy(eeb_input(pixels))

    known = {
        "Conv": {"kernel_shape", "strides", "pads", "dilations", "group"},
        "Gemm": {"transA", "transB", "alpha", "beta"},
        "Flatten": {"axis"},
        "Relu": set(),
        "MaxPool": {"kernel_shape", "strides", "pads", "ceil_mode", "dilations"},
        "AveragePool": {"kernel_shape", "strides", "pads", "ceil_mode", "count_include_pad"},
        "GlobalAveragePool": set(),
        "Add": set(),
        "Concat": {"axis"},
        "Slice": set(),
        "Reshape": set(),
    }

    def pads2d(a):
        """ONNX's pads [top, left, bottom, right] as F.pad's (left, right,
        top, bottom), and whether they are the same on every side."""
        p = list(a.get("pads", [0, 0, 0, 0]))
        return (p[1], p[3], p[0], p[2]), len(set(p)) == 1

    for n in g.node:
        a = {at.name: helper.get_attribute_value(at) for at in n.attribute}
        if n.op_type not in known:
            raise SystemExit("node '%s': %s is not among the operators eeb exports"
                             % (n.name, n.op_type))
        if set(a) - known[n.op_type]:
            raise SystemExit("node '%s' (%s): attributes %s unknown here"
                             % (n.name, n.op_type, sorted(set(a) - known[n.op_type])))
        ins = [env[i] if i else None for i in n.input]
        op = n.op_type
        if op == "Conv":
            wt = ins[1]
            assert list(a.get("kernel_shape", wt.shape[2:])) == list(wt.shape[2:])
            pad, same = pads2d(a)
            xin = ins[0] if same else F.pad(ins[0], pad)
            y = F.conv2d(xin, wt, ins[2] if len(ins) > 2 else None,
                         stride=tuple(a.get("strides", [1, 1])),
                         padding=pad[0] if same else 0,
                         dilation=tuple(a.get("dilations", [1, 1])), groups=a.get("group", 1))
        elif op == "Gemm":
            assert a.get("transA", 0) == 0
            b = ins[1].t() if a.get("transB", 0) else ins[1]
            y = a.get("alpha", 1.0) * (ins[0] @ b)
            if len(ins) > 2 and ins[2] is not None:
                y = y + a.get("beta", 1.0) * ins[2]
        elif op == "Flatten":
            axis = a.get("axis", 1)
            s = ins[0].shape
            y = ins[0].reshape(int(np.prod(s[:axis])), -1)
        elif op == "Relu":
            y = torch.relu(ins[0])
        elif op in ("MaxPool", "AveragePool"):
            assert a.get("ceil_mode", 0) == 0 and list(a.get("dilations", [1, 1])) == [1, 1]
            k = tuple(a["kernel_shape"])
            pad, same = pads2d(a)
            assert same, "%s: pads %s" % (n.name, a.get("pads"))
            stride = tuple(a.get("strides", [1, 1]))
            if op == "MaxPool":  # its padding is -inf: it never wins
                y = F.max_pool2d(ins[0], k, stride, pad[0])
            else:
                y = F.avg_pool2d(ins[0], k, stride, pad[0],
                                 count_include_pad=bool(a.get("count_include_pad", 0)))
        elif op == "GlobalAveragePool":
            y = ins[0].mean(dim=(2, 3), keepdim=True)
        elif op == "Add":
            y = ins[0] + ins[1]
        elif op == "Concat":
            y = torch.cat(ins, a["axis"])
        elif op == "Slice":  # data, starts, ends[, axes[, steps]]
            starts, ends = ins[1].tolist(), ins[2].tolist()
            axes = ins[3].tolist() if len(ins) > 3 and ins[3] is not None else \
                list(range(len(starts)))
            steps = ins[4].tolist() if len(ins) > 4 and ins[4] is not None else [1] * len(starts)
            idx = [slice(None)] * ins[0].dim()
            for s0, e0, ax, st in zip(starts, ends, axes, steps):
                assert st > 0
                idx[ax] = slice(s0, e0, st)  # Python's slices clamp as ONNX's do
            y = ins[0][tuple(idx)]
        elif op == "Reshape":
            shape = [ins[0].shape[i] if d == 0 else d for i, d in enumerate(ins[1].tolist())]
            y = ins[0].reshape(shape)
        assert len(n.output) == 1, n.name
        env[n.output[0]] = y

    out = env[g.output[0].name].detach()
    if out.dim() == 4:  # N C H W -> eeb's N H W C
        out = out.permute(0, 2, 3, 1)
    np.ascontiguousarray(out.numpy(), dtype=np.float32).tofile(os.path.join(args.out, "ref.f32"))
    print("%s: %d nodes, output %s %s" % (args.file, len(g.node), g.output[0].name,
                                            list(out.shape)))


def main():
    p = argparse.ArgumentParser()
    p.add_argument("what", choices=["resnet18", "ops", "bad", "check", "eval"])
    p.add_argument("dir", help="where the models go; check and eval: the model file")
    p.add_argument("out", nargs="?", help="eval: the directory of pixels.u8 and ref.f32")
    p.add_argument("--size", type=int, default=224)
    p.add_argument("--n", type=int, default=4)
    p.add_argument("--classes", type=int, default=1000)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--normalize", action="store_true")
    args = p.parse_args()
    if args.what in ("check", "eval"):
        args.file = args.dir
        if args.what == "eval" and not args.out:
            p.error("eval takes MODEL.onnx and a directory")
        return check(args) if args.what == "check" else evaluate(args)
    os.makedirs(args.dir, exist_ok=True)
    {"resnet18": resnet18, "ops": ops, "bad": bad}[args.what](args)


if __name__ == "__main__":
    sys.exit(main())
