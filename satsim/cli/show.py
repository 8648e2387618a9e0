"""``satsim show``: a model's architecture, sizes and head kinds, and with --degrees its graph."""

from __future__ import annotations

import json

import click

from satsim.analysis.describe import degree_table, describe, kind_text
from satsim.cli.options import NonEmptyPath, load_model
from satsim.errors import SatsimError
from satsim.rasp.syntax import LANGUAGE_NAMES


def _print_description(info: dict) -> None:
    about = f" — {info['description']}" if info["description"] else ""
    click.echo(f"model {info['name']}{about}")
    click.echo(f"vocab {' '.join(info['vocab'])} · bos {info['bos']} · eos {info['eos']} · "
               f"{info['dtype']} · {info['parameters']:,} parameters")
    layers = f"{info['n_layers']} layer{'s' if info['n_layers'] != 1 else ''}"
    kinds = "/".join(info["norm_kinds"])
    click.echo(f"d_model {info['d_model']} · {layers}{' (parallel)' if info['parallel'] else ''}"
               f" · norm {info['norm']}{f' {kinds}' if kinds else ''}"
               f"{' (affine)' if info['layer_norm_affine'] else ''} · residual "
               f"{_residual_text(info['residual'])} · positional {info['positional']}")
    click.echo(f"output {info['task']} · readout {info['readout']} · labels "
               f"{' '.join(info['labels'])}")
    layers = _layer_lines(info)
    if not info["source"]:
        click.echo("\n".join(layers))
        return
    click.echo(f"compiled from a {LANGUAGE_NAMES[info['source_language']]} program; exact up to "
               f"{info['max_tokens']:,} tokens (longer inputs are refused)")
    _beside(["program:", *info["source"].rstrip("\n").splitlines()], ["became:", *layers])


def _layer_lines(info: dict) -> list[str]:
    """Each layer's sublayers, heads and (for named dimensions) what they write."""
    lines = []
    fixed = {(h["layer"], h["head"]): kind_text(h["kind"], h["delta"]) for h in info["heads"]
             if h["kind"] != "run"}
    for layer, row in enumerate(info["layers"]):
        if "attn" in row:
            a = row["attn"]
            heads = f"{a['heads']} head{'s' if a['heads'] != 1 else ''}"
            lines.append(f"layer {layer} attn: {heads} × d_head {a['d_head']}, d_v "
                         f"{a['d_v']}, {a['mask']}, scale "
                         f"{a['scale']:.4g}, biases {', '.join(a['biases']) or 'none'}")
            for head, (kind, writes) in enumerate(zip(a["kinds"], a["writes"])):
                runs = f", runs {fixed[layer, head]}" if (layer, head) in fixed else ""
                lines.append(f"  head {head}: {kind}{runs}" + (f" → {', '.join(writes)}"
                                                               if writes else ""))
        if "mlp" in row:
            m = row["mlp"]
            lines.append(f"layer {layer} mlp: d_mlp {m['d_mlp']}, {m['activation']}, biases "
                         f"{', '.join(m['biases']) or 'none'}")
            if m["writes"]:
                lines.append(f"  → {', '.join(m['writes'])}")
    return lines


def _beside(left: list[str], right: list[str]) -> None:
    """Two columns: ``left`` wrapped to fit beside ``right`` (which wraps to the terminal)."""
    import shutil
    import textwrap
    from itertools import zip_longest

    columns = shutil.get_terminal_size((160, 40)).columns
    width = max(24, min(max(map(len, left)), columns // 2 - 2))
    wrapped = [part for line in left
               for part in (textwrap.wrap(line, width, subsequent_indent="    ") or [""])]
    for a, b in zip_longest(wrapped, right, fillvalue=""):
        click.echo(f"{a:<{width}} │ {b}".rstrip())


def _residual_text(residual) -> str:
    """'on', 'off', or the per-sublayer flags of a limit network, e.g. 'per sublayer 0111'."""
    if isinstance(residual, bool):
        return "on" if residual else "off"
    return "per sublayer " + "".join("1" if keep else "0" for keep in residual)


def _print_degrees(table: dict) -> None:
    click.echo("")
    click.echo(f"{'node':<40} {'op':<10} {'degree':>6}  notes")
    for node in table["nodes"]:
        notes = []
        if node["dropped"]:
            notes.append("drops " + ", ".join(node["dropped"]))
        if node["saturates"] is not None:
            notes.append("saturates" if node["saturates"] else "stays soft (degree-0 scores)")
        click.echo(f"{node['name']:<40} {node['op']:<10} {node['degree']:>6}  {'; '.join(notes)}")
    kept = "".join("1" if k else "0" for k in table["residual_kept"])
    click.echo(f"leading order: residual kept per sublayer {kept or '-'}")


@click.command("show")
@click.option("--lang", "lang_name", default=None, help="A language with a built-in construction.")
@click.option("--model", "model_path", type=NonEmptyPath(), default=None,
              help="A saved model spec (.safetensors) or a Hugging Face GPT-2 checkpoint folder.")
@click.option("--degrees", "with_degrees", is_flag=True,
              help="Also print the degree of homogeneity of every node of the network graph.")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
def command(lang_name, model_path, with_degrees, as_json) -> None:
    """Describe a model: architecture, sizes, head kinds (and node degrees)."""
    if lang_name is not None and model_path is not None:
        raise SatsimError("give --lang L (its construction) or --model PATH, not both: show "
                          "describes one model")
    spec = load_model(lang_name, model_path)
    info = describe(spec)
    if with_degrees:
        info["degrees"] = degree_table(spec)
    if as_json:
        click.echo(json.dumps(info))
        return
    _print_description(info)
    if with_degrees:
        _print_degrees(info["degrees"])
