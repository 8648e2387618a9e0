"""``satsim compile``: a C-RASP/B-RASP program, or a star-free language, into a saved model."""

from __future__ import annotations

import json
from pathlib import Path

import click

from satsim.cli.options import NonEmptyPath, OutputPath, count
from satsim.cli.progress import every_so_often


def same_file(first: str | Path, second: str | Path) -> bool:
    """Whether two paths name one file (through links and relative parts too)."""
    first, second = Path(first), Path(second)
    if first.exists() and second.exists():
        return first.samefile(second)
    return first.resolve() == second.resolve()


def model_summary(spec) -> dict:
    """Layers, heads, width and the exactness bound of a compiled model."""
    heads = [b.attn.n_heads if b.attn is not None else 0 for b in spec.blocks]
    masks = sorted({m for b in spec.blocks if b.attn is not None for m in b.attn.head_masks})
    return {"name": spec.name, "layers": spec.n_layers, "heads": sum(heads),
            "heads_per_layer": heads, "masks": masks, "d_model": spec.d_model,
            "max_tokens": spec.max_tokens}


def summary_line(info: dict) -> str:
    """The model's size in one line."""
    return (f"{info['layers']} layers, {info['heads']} heads (per layer "
            f"{'/'.join(map(str, info['heads_per_layer']))}; masks {', '.join(info['masks'])}), "
            f"d_model {info['d_model']}; exact up to {info['max_tokens']:,} tokens")


@click.command("compile")
@click.argument("program_path", metavar="FILE", required=False,
                type=NonEmptyPath(dir_okay=False))
@click.option("--lang", "lang_name", default=None,
              help="Instead of FILE: a star-free regular language of the suite, compiled "
                   "through a B-RASP program (its minimal DFA's holonomy cascade).")
@click.option("-o", "--out", "out_path", type=OutputPath(), default=None,
              help="Write the model here (.safetensors; it carries the program).")
@click.option("--program-out", "program_out", type=OutputPath(), default=None,
              help="With --lang: also write the B-RASP program here.")
@click.option("--max-len", type=count(), default=10, show_default=True,
              help="With --lang: check every string up to this length against the oracle.")
@click.option("--long", "long_count", type=count(), default=10, show_default=True,
              help="With --lang: and this many random strings, and as many of the language's "
                   "samples (positives and hard negatives) ...")
@click.option("--long-len", type=count(1), default=10_000, show_default=True,
              help="... of up to this many symbols.")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
def command(program_path, lang_name, out_path, program_out, max_len, long_count, long_len,
            as_json) -> None:
    """Compile a program FILE (.crasp, .brasp) or a language into a saturated transformer.

    The model is exact at every length up to its stated bound and refuses longer inputs. With
    --lang, the language must be star-free (else the refusal names the witness), and the model
    is checked against the language's oracle.
    """
    from satsim.errors import SatsimError
    from satsim.model.io import save_spec
    from satsim.rasp import compile_program, parse_program, read_program, star_free_program

    if (program_path is None) == (lang_name is None):
        raise SatsimError("give a program FILE or --lang L (one of them)")
    if program_out is not None and lang_name is None:
        raise SatsimError("--program-out goes with --lang (FILE already is the program)")
    if out_path is not None and program_path is not None and same_file(out_path, program_path):
        raise SatsimError(f"-o {out_path} is the program FILE itself; write the model to "
                          "another file (e.g. one ending in .safetensors)")
    if out_path is not None and program_out is not None and same_file(out_path, program_out):
        raise SatsimError(f"-o and --program-out name one file ({out_path}); give two files")
    if lang_name is not None:
        import languages
        from satsim.rasp.verify import check_long_strings

        check_long_strings(long_count, long_len, samples=True)

        language = languages.get(lang_name)
        text = star_free_program(lang_name)
        program = parse_program(text, "brasp", f"<{lang_name}>")
        name = lang_name
    else:
        program = read_program(program_path)
        name = Path(program_path).stem
    spec = compile_program(program, name)
    info = {"program": program_path or f"<{lang_name}>", "language": program.language,
            **model_summary(spec)}
    if lang_name is not None:
        from satsim.rasp import verify
        from satsim.rasp.verify import language_samples

        check = verify(spec, language.contains, language.alphabet, max_len, long_count,
                       long_len, extra=language_samples(language, long_count, long_len),
                       progress=every_so_often("long strings checked"))
        info["verification"] = check.as_dict()
        if not check.ok:  # a bug of the compiler: keep the traceback, write nothing
            raise RuntimeError(f"the compiled model of {lang_name} disagrees with its oracle "
                               f"on {check.first_wrong!r}")
    if out_path is not None:
        save_spec(spec, out_path)
    if program_out is not None:
        Path(program_out).write_text(text, encoding="utf-8")
    if as_json:
        click.echo(json.dumps(info))
    else:
        from satsim.rasp.syntax import LANGUAGE_NAMES

        kind = LANGUAGE_NAMES[program.language]
        click.echo(f"compiled {info['program']} ({kind}, {len(program.definitions)} "
                   f"definitions): {summary_line(info)}")
        if "verification" in info:
            click.echo(f"against the oracle of {lang_name}: {check.summary()}")
        if out_path is not None:
            click.echo(f"wrote {out_path}")
