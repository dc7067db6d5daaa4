#!/usr/bin/env bash
# The README's first install, then the test tools: CPU torch, the package with every peer library
# of every entry (the everything extra), the test extra.
# torch comes first as the CPU build pinned here: an unpinned torch (pulled by torchmetrics,
# sentence-transformers and MTEB) resolves to a multi-gigabyte CUDA build.
set -euo pipefail
# The distribution was once named conformance, as the package index's unrelated project is: an
# editable install left under that name would still claim the conformance package.
if python -m pip show conformance 2>/dev/null | grep -q "^Summary: Ranking metrics"; then
    python -m pip uninstall -y -q --disable-pip-version-check conformance
fi
python -m pip install -q --disable-pip-version-check torch==2.13.0
python -m pip install -q --disable-pip-version-check -e ".[everything,test]"
# The libraries that cannot be installed beside the others, each in an environment of its own
# (conformance.environments: what each installs; idempotent, so a ready one costs nothing)
conformance env create --all
# The HTML report's tests drive a real headless Chromium through playwright. Chromium comes from
# the system packages; `playwright install` is not used (it downloads its own browser), and the
# tests launch /usr/bin/chromium (CONFORMANCE_CHROMIUM overrides the path).
if [ ! -x "${CONFORMANCE_CHROMIUM:-/usr/bin/chromium}" ]; then
    apt-get update -q && apt-get install -y -q chromium
fi
# The spark extra (pyspark 4) runs on a JVM: Java 17 or later. A machine without `java` gets the
# distribution's headless OpenJDK 17 runtime.
if ! command -v java > /dev/null 2>&1; then
    apt-get update -q && apt-get install -y -q openjdk-17-jre-headless
fi
