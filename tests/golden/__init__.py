"""Traffic captured from a real kube-apiserver v1.36.2 and kubectl (see README.md beside this file)."""

from pathlib import Path

#: the directory of the captures; every test and benchmark that reads one finds it here
GOLDEN = Path(__file__).resolve().parent
