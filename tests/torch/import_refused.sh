# Sourced by tests/torch/test_import_guard.sh and test_import_cross.sh (which define fail).
# refused DIR PYTHON WANT...: `import ringdp_torch` from DIR with PYTHON must exit 1 with an
# ImportError that says each WANT, without the compiled module being loaded (an abort, or an
# undefined symbol, means the loader mapped it).
refused() {
  local dir=$1 python=$2 out rc line
  shift 2
  out=$(PYTHONPATH="$dir" "$python" -c 'import ringdp_torch' 2>&1)
  rc=$?
  [ $rc -eq 1 ] || fail "import with $python from $dir exited $rc (want 1, an ImportError): $out"
  ! grep -q "terminate called\|Aborted\|undefined symbol" <<<"$out" || fail "the module was loaded: $out"
  line=$(grep '^ImportError: ' <<<"$out") || fail "no ImportError: $out"
  for want in "$@"; do
    grep -qF -- "$want" <<<"$line" || fail "the ImportError does not say '$want': $line"
  done
  echo "ok: refused: $line"
}
