import sys
from pathlib import Path

# the metric functions and library wrappers the tests infer live beside them
sys.path.insert(0, str(Path(__file__).parent))
