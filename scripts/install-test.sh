#!/usr/bin/env bash
# Installs conformance with every peer library and the test tools.
# torch comes first as the CPU build pinned here: an unpinned torch (pulled by torchmetrics)
# resolves to a multi-gigabyte CUDA build.
set -euo pipefail
python -m pip install -q --disable-pip-version-check torch==2.13.0
python -m pip install -q --disable-pip-version-check -e ".[all,torchmetrics,test]"
