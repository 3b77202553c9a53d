# Sourced by the Python wrappers: sets PY to the project venv's interpreter,
# creating the venv with scripts/setup when it is missing.
root="${root:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}"
PY="$root/.venv/bin/python"
if ! [ -x "$PY" ] || ! "$PY" -c "import h5py, numpy, matplotlib" 2>/dev/null; then
  echo "$(basename "$0"): no .venv with h5py, numpy, matplotlib: running scripts/setup" >&2
  "$root/scripts/setup" >&2 || true
  if ! [ -x "$PY" ] || ! "$PY" -c "import h5py, numpy, matplotlib" 2>/dev/null; then
    echo "$(basename "$0"): still no venv; create it by hand: python3 -m venv $root/.venv && $root/.venv/bin/pip install h5py numpy matplotlib" >&2
    exit 1
  fi
fi
