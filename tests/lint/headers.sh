#!/usr/bin/env bash
# Each header compiles on its own: tests/lint/headers.sh SOURCE_ROOT BUILD_ROOT
# A header that leans on what its includer happened to include first breaks the next person to
# include it elsewhere, or a newer compiler (g++ 13 on the GPU machine). Each .h is compiled alone,
# -std=c++20 -Wall -Wextra -Werror, with the include paths the build gives, in parallel; headers
# of a library this machine lacks (CUDA, MPI) are listed as not checked, never counted as passed.
set -uo pipefail
root=$(cd "$1" && pwd)
build=$(cd "$2" && pwd)
cd "$root"
flags=(-std=c++20 -Wall -Wextra -Werror -fsyntax-only -x c++ -I "$root" -I "$build")
[ -d /usr/local/cuda/include ] && flags+=(-isystem /usr/local/cuda/include)
if command -v mpicxx >/dev/null; then
  read -ra mpi_flags <<<"$(mpicxx --showme:compile 2>/dev/null)"
  flags+=("${mpi_flags[@]}" -DOMPI_SKIP_MPICXX=1 -DMPICH_SKIP_MPICXX=1)
fi

# check HEADER: prints "ok", "unchecked" or the compiler's first lines, prefixed by the header.
check() {
  local header=$1 extra=() log
  # The emulator's CUDA and NCCL headers stand in for the real ones: compile their users against them.
  case "$header" in tests/doubles/cuda/*|tests/doubles/nccl/*) extra=(-I "$root/tests/doubles/cuda/include" -I "$root/tests/doubles/nccl") ;; esac
  if log=$(echo "#include \"$header\"" | "${CXX:-c++}" "${flags[@]}" "${extra[@]}" - 2>&1); then
    echo "ok $header"
  elif grep -qE "fatal error: (cuda_runtime|cuda_bf16|cuda_fp16|nccl|mpi)\.h: No such file" <<<"$log"; then
    echo "unchecked $header"
  else
    echo "FAIL $header"
    head -n 8 <<<"$log" | sed 's/^/    /'
  fi
}
export -f check
export root
results=$(find core kernels tensor autograd comm apps tests bench -name '*.h' | sort |
  xargs -P "$(nproc)" -I{} bash -c "$(declare -p flags); check {}")
grep -v '^ok ' <<<"$results" | grep -v '^unchecked ' || true
unchecked=$(grep '^unchecked ' <<<"$results" | cut -d' ' -f2 | tr '\n' ' ')
[ -z "$unchecked" ] || echo "not checked (library not on this machine): $unchecked"
failed=$(grep -c '^FAIL ' <<<"$results")
echo "$(grep -c '^ok \|^FAIL ' <<<"$results") headers checked, $failed not self-contained"
[ "$failed" -eq 0 ]
