"""torch.compile(fullgraph=True) raising at the first call is a compile failure in the report (the
compiled module was called), never "the compiled module was never called". Ground truth: the
script itself catches torch's exception and prints its type."""


def test_fullgraph_error_is_a_compile_failure(run_report):
    proc, report = run_report("fullgraph_error")
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "compile failed: Unsupported" in proc.stdout  # torch raised to the script at the first call
    failed = report["compile_failed"]
    assert failed["fullgraph_break"] and failed["nothing_compiled"]
    assert failed["functions"] == ["forward"] and failed["compile_ids"] == ["0/0"]
    (site,) = failed["sites"]
    assert site.endswith("fullgraph_error.py:22")  # the torch.compile line of the script
    kinds = [h["kind"] for h in report["headlines"]]
    assert kinds[0] == "compile_failed" and "no_graph" not in kinds
    assert "never called" not in proc.stdout and "was called and its compile failed" in proc.stdout
    assert "fullgraph_error.py:17" in report["headlines"][0]["fix"]  # the print that broke


def test_a_run_that_compiled_has_no_compile_failure(run_report):
    _, report = run_report("argument_paths")
    assert report["compile_failed"] is None
