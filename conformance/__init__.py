"""conformance: ranking metrics under named conventions, beside the libraries that compute them.

The public API (documented in the README, defined in ``conformance.api`` and the modules it
names) is loaded on first use, so that importing one module of the package (the command line's
``eval`` imports only the readers and the reference) does not import them all::

    import conformance
    result = conformance.evaluate(qrels, run, "nDCG@10,AP", profile="trec_eval")
    result.mean["nDCG@10"]
"""

# public name -> the module that defines it
_PUBLIC = {
    "Qrels": "conformance.io",
    "Run": "conformance.io",
    "Conventions": "conformance.conventions",
    "AXES": "conformance.conventions",
    "FAMILIES": "conformance.measures",
    "Measure": "conformance.measures",
    "parse_measure": "conformance.measures",
    "parse_measures": "conformance.measures",
    "ConformanceError": "conformance.errors",
    "InputError": "conformance.errors",
    "evaluate": "conformance.api",
    "Evaluated": "conformance.api",
    "Evaluator": "conformance.api",
    "profile": "conformance.api",
    "entries": "conformance.api",
    "compare": "conformance.api",
    "check_paper": "conformance.api",
    "infer": "conformance.infer",
    "__version__": "conformance.distribution",  # declared there, read by pyproject.toml
}

__all__ = sorted(_PUBLIC)


def __getattr__(name: str):
    if name in _PUBLIC:
        import importlib

        value = getattr(importlib.import_module(_PUBLIC[name]), name)
        globals()[name] = value  # later lookups do not come here
        return value
    raise AttributeError(f"module 'conformance' has no attribute {name!r}")


def __dir__():
    return __all__
