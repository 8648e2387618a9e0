"""An independent high-precision forward pass of a spec at scale c, written from the definitions.

It shares no code with satsim's forward passes: every parameter is turned into mpmath numbers,
multiplied by c, and the transformer is evaluated with Python loops at ``dps`` decimal digits.
Softmax is evaluated with the maximum subtracted, so scores of size c^4 are no problem, and the
precision is high enough that terms many orders of c below the top still show.
"""

from __future__ import annotations

import mpmath
import numpy as np

from satsim.model.masks import key_range


def _mp(array, c):
    """An object array of mpf: ``array`` times c (None stays None)."""
    if array is None:
        return None
    flat = [mpmath.mpf(float(v)) * c for v in np.asarray(array, dtype=np.float64).ravel()]
    return np.array(flat, dtype=object).reshape(np.shape(array))


def _matmul(x, w):
    """(n, a) @ (a, b) in object arithmetic."""
    out = np.empty((x.shape[0], w.shape[1]), dtype=object)
    for i in range(x.shape[0]):
        for j in range(w.shape[1]):
            out[i, j] = mpmath.fsum(x[i, k] * w[k, j] for k in range(x.shape[1]))
    return out


def _layer_norm(x, w, b, eps, centre=True):
    """LayerNorm, or RMSNorm (no centring, no shift) without ``centre``."""
    out = np.empty_like(x)
    d = x.shape[1]
    for i in range(x.shape[0]):
        mean = mpmath.fsum(x[i]) / d if centre else mpmath.mpf(0)
        var = mpmath.fsum((v - mean) ** 2 for v in x[i]) / d
        inv = 1 / mpmath.sqrt(var + eps)
        for j in range(d):
            y = (x[i, j] - mean) * inv
            if w is not None:
                y = y * w[j]
            out[i, j] = y if b is None else y + b[j]
    return out


ACTIVATIONS = {
    "relu": lambda v: v if v > 0 else mpmath.mpf(0),
    "gelu": lambda v: v * (1 + mpmath.erf(v / mpmath.sqrt(2))) / 2,
    "gelu_tanh": lambda v: v * (1 + mpmath.tanh(mpmath.sqrt(2 / mpmath.pi)
                                                * (v + mpmath.mpf("0.044715") * v**3))) / 2,
    "silu": lambda v: v / (1 + mpmath.exp(-v)),
}


def _positions(spec, n, c):
    pos = spec.positional
    if pos.kind == "none":
        return None
    if pos.kind == "learned":
        return _mp(pos.W_pos[:n], c)
    if pos.kind == "sinusoidal":  # fixed, not a parameter: not scaled
        d = spec.d_model
        table = np.empty((n, d), dtype=object)
        for p in range(n):
            for col in range(d):
                angle = mpmath.mpf(p) / mpmath.power(10000, mpmath.mpf(2 * (col // 2)) / d)
                table[p, col] = mpmath.sin(angle) if col % 2 == 0 else mpmath.cos(angle)
        return table
    feats = {"1": lambda i: mpmath.mpf(1), "i": lambda i: mpmath.mpf(i),
             "1/i": lambda i: 1 / mpmath.mpf(i), "i/n": lambda i: mpmath.mpf(i) / n,
             "n": lambda i: mpmath.mpf(n), "1/n": lambda i: 1 / mpmath.mpf(n),
             "(-1)^i": lambda i: mpmath.mpf(1 if i % 2 == 0 else -1)}
    rows = np.array([[feats[name](i) for name in pos.features] for i in range(1, n + 1)],
                    dtype=object).reshape(n, len(pos.features))
    return _matmul(rows, _mp(pos.W_feat, c))


def _attention(x, attn, c):
    heads, _, d_head = attn.W_Q.shape
    n = x.shape[0]
    out = np.zeros((n, attn.W_O.shape[2]), dtype=object)
    out[:] = mpmath.mpf(0)
    for h in range(heads):
        q = _matmul(x, _mp(attn.W_Q[h], c))
        k = _matmul(x, _mp(attn.W_K[h], c))
        v = _matmul(x, _mp(attn.W_V[h], c))
        for vec, bias in ((q, attn.b_Q), (k, attn.b_K), (v, attn.b_V)):
            if bias is not None:
                vec += _mp(bias[h], c)[None, :]
        heads_out = np.empty((n, v.shape[1]), dtype=object)
        for i in range(n):
            keys = range(*key_range(attn.head_masks[h], i, n))
            if not keys:  # nothing to attend: the zero vector
                heads_out[i, :] = mpmath.mpf(0)
                continue
            scale = (1 / mpmath.sqrt(d_head) if attn.scale is None
                     else mpmath.mpf(float(attn.scale)))
            scores = [mpmath.fsum(q[i, e] * k[j, e] for e in range(d_head)) * scale
                      for j in keys]
            top = max(scores)
            weights = [mpmath.exp(s - top) for s in scores]
            total = mpmath.fsum(weights)
            for e in range(v.shape[1]):
                heads_out[i, e] = mpmath.fsum(w * v[j, e] for w, j in zip(weights, keys)) / total
        out = out + _matmul(heads_out, _mp(attn.W_O[h], c))
    if attn.b_O is not None:
        out = out + _mp(attn.b_O, c)[None, :]
    return out


def _feed_forward(x, mlp, c):
    hidden = _matmul(x, _mp(mlp.W_in, c))
    if mlp.b_in is not None:
        hidden = hidden + _mp(mlp.b_in, c)[None, :]
    hidden = np.vectorize(ACTIVATIONS[mlp.activation], otypes=[object])(hidden)
    out = _matmul(hidden, _mp(mlp.W_out, c))
    return out if mlp.b_out is None else out + _mp(mlp.b_out, c)[None, :]


def _norm(x, ln, c):
    return _layer_norm(x, _mp(ln.w, c), _mp(ln.b, c), mpmath.mpf(ln.eps), ln.kind == "layer")


def mp_logits(spec, string: str, c: float, dps: int = 120) -> np.ndarray:
    """Logits (n_tokens, n_outputs) of ``string`` through ``spec`` with every parameter times c."""
    with mpmath.workdps(dps):
        c = mpmath.mpf(c)
        tokens = ([spec.bos] if spec.bos else []) + list(string) + ([spec.eos] if spec.eos else [])
        ids = [spec.vocab.index(t) for t in tokens]
        x = _mp(spec.W_E[ids], c)
        pos = _positions(spec, len(ids), c)
        if pos is not None:
            x = x + pos
        sublayers = spec.sublayers()
        flags = (spec.residual if isinstance(spec.residual, tuple)
                 else (spec.residual,) * len(sublayers))
        keeps = dict(zip(sublayers, flags))
        for layer, block in enumerate(spec.blocks):
            parts = [(kind, sub, ln) for kind, sub, ln in (("attn", block.attn, block.ln1),
                                                           ("mlp", block.mlp, block.ln2))
                     if sub is not None]
            groups = [parts] if spec.parallel else [[part] for part in parts]
            for group in groups:
                keep = keeps[layer, group[0][0]]
                outs = []
                for kind, sub, ln in group:
                    h = _norm(x, ln, c) if spec.norm == "pre" else x
                    outs.append(_attention(h, sub, c) if kind == "attn"
                                else _feed_forward(h, sub, c))
                y = outs[0]
                for out in outs[1:]:
                    y = y + out
                x = x + y if keep else y
                if spec.norm == "post":
                    x = _norm(x, group[0][2], c)
        if spec.ln_final is not None:
            x = _norm(x, spec.ln_final, c)
        logits = _matmul(x, _mp(spec.output.W_U, c))
        if spec.output.b_U is not None:
            logits = logits + _mp(spec.output.b_U, c)[None, :]
        return logits


def mp_signs(spec, string: str, c: float, dps: int = 120) -> np.ndarray:
    """Signs (float, -1/0/1) of the readout logits, shaped like the simulator's logits."""
    logits = mp_logits(spec, string, c, dps)
    signs = np.vectorize(lambda v: float(mpmath.sign(v)), otypes=[float])(logits)
    return signs[-1] if spec.output.readout == "last" else signs
