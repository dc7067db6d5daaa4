#!/usr/bin/env bash
# The wheel works outside the checkout: build the sdist and, from it, the wheel; install the wheel
# with one extra (trec-eval) into a fresh virtual environment in a temporary folder; from another
# temporary folder, with no PYTHONPATH, check that conformance is imported from that environment
# and run the commands a new user runs first. .ci/run runs it after the tests.
#
# The environment is fresh (no --system-site-packages): the checkout's own editable install of
# the same distribution would otherwise satisfy the wheel's requirement, and pip would install
# nothing. The core dependencies and pytrec-eval-terrier come from the package index (or pip's
# cache); the build uses the installed setuptools (--no-isolation: nothing downloaded).
set -euo pipefail
cd "$(dirname "$0")/.."
started=$(date +%s)
work=$(mktemp -d "${TMPDIR:-/tmp}/conformance-wheel.XXXXXX")
trap 'rm -rf "$work"' EXIT

# build from a copy, so that the checkout gets no build/ or egg-info/
mkdir "$work/src" "$work/elsewhere"
cp -r pyproject.toml MANIFEST.in README.md CHANGELOG.md conformance "$work/src/"
find "$work/src" -name __pycache__ -prune -exec rm -rf {} +
step() { echo "wheel-test: $1 at $(( $(date +%s) - started )) s"; }
python -m build --no-isolation --outdir "$work/dist" "$work/src" > "$work/build.log" 2>&1 \
    || { tail -40 "$work/build.log"; exit 1; }
wheel=$(ls "$work"/dist/*.whl)
sdist=$(ls "$work"/dist/*.tar.gz)
echo "wheel-test: built $(basename "$wheel") ($(du -k "$wheel" | cut -f1) KiB) and $(basename "$sdist") ($(du -k "$sdist" | cut -f1) KiB)"

step "built"
python -m venv "$work/venv"
py="$work/venv/bin/python"
"$py" -m pip install -q --disable-pip-version-check --no-compile "$wheel[trec-eval]"
step "installed"

cd "$work/elsewhere"
unset PYTHONPATH
fail() { echo "wheel-test: FAILED: $*" >&2; exit 1; }

"$py" - "$work/venv" <<'EOF' || fail "conformance or pytrec_eval is not imported from the environment"
import importlib.metadata, os, sys
import conformance, pytrec_eval
venv = os.path.realpath(sys.argv[1])
for module in (conformance, pytrec_eval):
    where = os.path.realpath(module.__file__)
    assert where.startswith(venv + os.sep), f"{module.__name__} imported from {where}"
assert importlib.metadata.version("pytrec-eval-terrier")
print("wheel-test: conformance from", os.path.realpath(conformance.__file__))
EOF

bin="$work/venv/bin"
version=$("$bin/conformance" --version) || fail "conformance --version"
expected="conformance $("$py" -c 'import conformance; print(conformance.__version__)')"
[ "$version" = "$expected" ] || fail "--version printed '$version', expected '$expected' (no commit from a wheel)"

"$bin/conformance" run --libs all --quiet > run.out 2> run.err || { cat run.out run.err; fail "conformance run --libs all --quiet"; }
grep -q "^  trec_eval " run.out || { cat run.out; fail "trec_eval (the trec-eval extra) did not run"; }
# a library not installed is named with the distribution's extra, as pip matches it
grep -q 'pip install "ranking-conformance\[ranx\]"' run.out run.err \
    || { cat run.out run.err; fail "the install hint does not name ranking-conformance[ranx]"; }

step "ran"
"$bin/conformance" eval --example > eval.out 2>&1 || { cat eval.out; fail "conformance eval --example"; }
"$bin/conformance" rag --example --precomputed > rag.out 2>&1 || { cat rag.out; fail "conformance rag --example --precomputed"; }
[ -s eval.out ] && [ -s rag.out ] || fail "eval or rag printed nothing"

echo "wheel-test: ok in $(( $(date +%s) - started )) s: $version from the wheel outside the checkout; run --libs all --quiet, eval --example, rag --example --precomputed"
