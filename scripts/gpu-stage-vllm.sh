#!/bin/bash
# Prepares vLLM VLLM_VERSION (the PyPI wheel; default 0.26.0) and the wheels it needs for an offline
# GPU host, cut into pieces small enough to send one per transfer.  Adapted from
# ../shared/gpu-vllm/make_stage.sh (0.24.0 only); that folder's kit (receive_piece.sh,
# install_offline.sh, build_models.py, run_capture.sh, loadgen.py, scraper.py, the tokenizer) goes
# into the last piece unchanged, with this folder's gpu-capture.sh and gpu-sidecar.sh beside it.
# Run it on any Linux machine with PyPI access (no GPU needed):
#
#   VLLM_VERSION=0.26.0 bash scripts/gpu-stage-vllm.sh [options] REPO_ROOT
#
#   REPO_ROOT             the git checkout whose tree goes to the GPU host with each transfer
#   --extra-wheels DIR    also copy DIR/*.whl (your own project's wheel, say) into
#                         REPO_ROOT/.gpu-stage/extra; install_offline.sh installs them beside vLLM
#   --extra-req FILE      also download these pinned requirements (cp312, manylinux x86_64,
#                         no dependencies) into .gpu-stage/extra: the dependencies of your wheel
#                         that the GPU host lacks (compare with host_image_packages.txt)
#   --extra-only          write only .gpu-stage/extra; leave the pieces as they are
#   --piece-mib N         largest size of one piece folder, MiB (default 45; the repository
#                         itself travels with every piece, so leave room for it)
#
# Writes REPO_ROOT/.gpu-stage/p1 ... pN, each holding one part of stage.tar.xz, SHA256SUMS,
# PIECE (its number) and receive_piece.sh; the last one also holds kit/ (the scripts that run on
# the GPU host, and the tokenizer).  Adds /.gpu-stage/ to the repository's .git/info/exclude.
#
# Environment: VLLM_VERSION (0.26.0; needs scripts/gpu-vllm/extra_wheels-VERSION.txt), KIT_SRC
# (the shared kit, default ../shared/gpu-vllm beside the repository), PYTHON (python3), BUILD_DIR
# (/tmp/gpu-vllm-build-VERSION; the ~300 MB vLLM wheel is kept there between runs),
# UPLOADED_PRIOR_TO (2026-07-26T00:00:00Z, the day after vLLM 0.26.0's upload; applies to the
# wheels of the extra_wheels list), XZ_LEVEL (-6).
set -euo pipefail

SCRIPTS=$(cd "$(dirname "$0")" && pwd)
VLLM_VERSION=${VLLM_VERSION:-0.26.0}
HERE=$(cd "${KIT_SRC:-$SCRIPTS/../../shared/gpu-vllm}" && pwd)   # the shared kit
WHEEL_LIST=$SCRIPTS/gpu-vllm/extra_wheels-$VLLM_VERSION.txt
[ -f "$WHEEL_LIST" ] || { echo "gpu-stage-vllm.sh: no $WHEEL_LIST (compare the wheel's Requires-Dist with host_image_packages.txt)" >&2; exit 1; }
PYTHON=${PYTHON:-python3}
BUILD_DIR=${BUILD_DIR:-/tmp/gpu-vllm-build-$VLLM_VERSION}
UPLOADED_PRIOR_TO=${UPLOADED_PRIOR_TO:-2026-07-26T00:00:00Z}
XZ_LEVEL=${XZ_LEVEL:--6}
PIECE_MIB=45
EXTRA_WHEELS=(); EXTRA_REQS=(); EXTRA_ONLY=0; REPO=

usage() { sed -n '2,30p' "$0" | sed 's/^# \{0,1\}//'; exit "${1:-0}"; }
die() { echo "make_stage.sh: $*" >&2; exit 1; }

while [ $# -gt 0 ]; do
  case $1 in
    --extra-wheels) EXTRA_WHEELS+=("$(cd "${2:?--extra-wheels needs a folder}" && pwd)"); shift 2;;
    --extra-req) [ -f "${2:-}" ] || die "--extra-req: no such file: ${2:-}"
                 EXTRA_REQS+=("$(cd "$(dirname "$2")" && pwd)/$(basename "$2")"); shift 2;;
    --extra-only) EXTRA_ONLY=1; shift;;
    --piece-mib) PIECE_MIB=${2:?--piece-mib needs a number}; shift 2;;
    -h|--help) usage 0;;
    -*) echo "unknown option $1" >&2; usage 2;;
    *) [ -z "$REPO" ] || die "one REPO_ROOT only"; REPO=$1; shift;;
  esac
done
[ -n "$REPO" ] || usage 2
REPO=$(cd "$REPO" && pwd)
EXCLUDE=$(git -C "$REPO" rev-parse --git-path info/exclude 2>/dev/null) || die "$REPO is not a git checkout"
case $EXCLUDE in /*) ;; *) EXCLUDE=$REPO/$EXCLUDE;; esac
for c in xz tar split sha256sum du; do command -v $c >/dev/null || die "needs $c"; done
[[ $PIECE_MIB =~ ^[0-9]+$ ]] && [ "$PIECE_MIB" -ge 8 ] || die "--piece-mib must be a whole number >= 8"
STAGE_OUT=$REPO/.gpu-stage
mkdir -p "$BUILD_DIR" "$STAGE_OUT"
mkdir -p "$(dirname "$EXCLUDE")"
grep -qxF '/.gpu-stage/' "$EXCLUDE" 2>/dev/null || echo '/.gpu-stage/' >> "$EXCLUDE"

# pip >= 26 knows --uploaded-prior-to; an older one gets a private, upgraded copy.
PIP=("$PYTHON" -m pip)
if ! "${PIP[@]}" download --help 2>/dev/null | grep -q -- --uploaded-prior-to; then
  if [ ! -x "$BUILD_DIR/pipenv/bin/python" ]; then
    echo "== pip here is too old for --uploaded-prior-to: making $BUILD_DIR/pipenv"
    "$PYTHON" -m venv "$BUILD_DIR/pipenv"
    "$BUILD_DIR/pipenv/bin/python" -m pip install -q -U pip
  fi
  PIP=("$BUILD_DIR/pipenv/bin/python" -m pip)
fi
# The GPU host runs CPython 3.12 on manylinux x86_64; pip matches each manylinux_2_N tag exactly.
PLAT=(--only-binary=:all: --no-deps --python-version 3.12 --implementation cp
      --platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64 --platform manylinux_2_17_x86_64
      --platform manylinux2014_x86_64 --platform manylinux1_x86_64 --platform manylinux_2_24_x86_64
      --platform manylinux_2_31_x86_64 --platform manylinux_2_34_x86_64 --platform manylinux_2_35_x86_64
      --platform manylinux_2_5_x86_64 --platform linux_x86_64 --platform any)
# The dependency pins were chosen among files uploaded before this date (the vLLM wheel is newer).
DATED=(--uploaded-prior-to "$UPLOADED_PRIOR_TO")

# Unpacks a wheel (a zip file) keeping the file modes; needs no unzip program.
unpack_wheel() {
  "$PYTHON" - "$1" "$2" <<'PY'
import os, sys, zipfile
with zipfile.ZipFile(sys.argv[1]) as z:
    for info in z.infolist():
        path = z.extract(info, sys.argv[2])
        mode = info.external_attr >> 16
        if mode and not info.is_dir():
            os.chmod(path, mode & 0o7777)
PY
}

mib_of() { du -sb "$1" | awk '{printf "%.1f", $1 / 1048576}'; }
check_size() {  # folder, limit in MiB
  local bytes; bytes=$(du -sb "$1" | awk '{print $1}')
  [ "$bytes" -le $(( $2 * 1048576 )) ] || die "$1 is $(mib_of "$1") MiB, over $2 MiB"
}

make_extra() {
  local x=$STAGE_OUT/extra
  rm -rf "$x"; mkdir -p "$x"
  local d r n=0
  for d in "${EXTRA_WHEELS[@]}"; do
    compgen -G "$d/*.whl" >/dev/null || die "no *.whl in $d"
    cp "$d"/*.whl "$x"/
  done
  for r in "${EXTRA_REQS[@]}"; do
    "${PIP[@]}" download -q "${PLAT[@]}" -d "$x" -r "$r"
  done
  n=$(find "$x" -name '*.whl' | wc -l)
  echo "== .gpu-stage/extra: $n wheel(s), $(mib_of "$x") MiB"
  ls -1 "$x"
  check_size "$x" "$PIECE_MIB"
}

if [ "$EXTRA_ONLY" = 1 ]; then
  [ ${#EXTRA_WHEELS[@]} -gt 0 ] || [ ${#EXTRA_REQS[@]} -gt 0 ] || die "--extra-only needs --extra-wheels or --extra-req"
  make_extra
  exit 0
fi

# 1. The vLLM wheel (kept in BUILD_DIR between runs).
VLLM_WHEEL=$BUILD_DIR/vllm-$VLLM_VERSION-cp38-abi3-manylinux_2_28_x86_64.whl
if [ ! -f "$VLLM_WHEEL" ]; then
  echo "== downloading vllm $VLLM_VERSION (~300 MB)"
  "${PIP[@]}" download -q "${PLAT[@]}" -d "$BUILD_DIR" "vllm==$VLLM_VERSION"
fi
[ -f "$VLLM_WHEEL" ] || die "pip did not produce $VLLM_WHEEL"

TREE=$BUILD_DIR/tree
rm -rf "$TREE" "$BUILD_DIR/xg" "$BUILD_DIR/parts"
mkdir -p "$TREE/site" "$TREE/whl" "$BUILD_DIR/xg" "$BUILD_DIR/parts"

# 2. Dependency wheels the host image lacks (the list is per vLLM version), installed there by pip.
echo "== downloading the dependency wheels of extra_wheels.txt"
grep -v -E '^(xgrammar|apache-tvm-ffi)==' "$WHEEL_LIST" > "$BUILD_DIR/reqs.txt"
"${PIP[@]}" download -q "${PLAT[@]}" "${DATED[@]}" -d "$TREE/whl" -r "$BUILD_DIR/reqs.txt"
ls "$TREE/whl" | grep -qi '^typing_inspection-' || die "typing-inspection is missing from the stage"

# 3. xgrammar + apache-tvm-ffi, unpacked, without xgrammar's 65 MB static library (nothing
#    imports it); vLLM imports xgrammar at startup, so it must be there.
echo "== xgrammar and apache-tvm-ffi"
"${PIP[@]}" download -q "${PLAT[@]}" "${DATED[@]}" -d "$BUILD_DIR/xg" \
  "$(grep -E '^xgrammar==' "$WHEEL_LIST")" "$(grep -E '^apache-tvm-ffi==' "$WHEEL_LIST")"
for w in "$BUILD_DIR"/xg/*.whl; do unpack_wheel "$w" "$TREE/site"; done
rm -f "$TREE/site/xgrammar/lib/libxgrammar.a"

# 4. vLLM itself, without the parts these runs never load: the FA2 kernels, the MoE kernels,
#    FlashMLA, the rust frontend, deep_gemm and fmha_sm100 (0.26.0 has the same files as 0.24.0;
#    FA3, which the H200 uses, stays).
echo "== unpacking and trimming vllm"
unpack_wheel "$VLLM_WHEEL" "$TREE/site"
( cd "$TREE/site/vllm" && rm -rf vllm_flash_attn/_vllm_fa2_C.abi3.so _moe_C_stable_libtorch.abi3.so \
    vllm-rs _flashmla_C.abi3.so _flashmla_extension_C.abi3.so third_party/fmha_sm100 third_party/deep_gemm )

# 5. One archive, cut into parts; a piece folder = one part + a few small files.
echo "== packing ($(du -sm "$TREE" | cut -f1) MB unpacked; xz $XZ_LEVEL, a few minutes)"
tar -C "$TREE" --owner=0 --group=0 --numeric-owner -cf - site whl | xz -T0 "$XZ_LEVEL" > "$BUILD_DIR/stage.tar.xz"
PART_MIB=$(( PIECE_MIB - 1 ))   # leaves 1 MiB for SHA256SUMS, receive_piece.sh and kit/
( cd "$BUILD_DIR/parts" && split -b "${PART_MIB}M" -d -a 2 ../stage.tar.xz stage.part. \
  && sha256sum stage.part.* > SHA256SUMS )
N=$(grep -c . "$BUILD_DIR/parts/SHA256SUMS")

rm -rf "$STAGE_OUT"/p[0-9]*
i=0
while read -r _ part; do
  i=$((i + 1)); P=$STAGE_OUT/p$i
  mkdir -p "$P"
  mv "$BUILD_DIR/parts/$part" "$P/"
  cp "$BUILD_DIR/parts/SHA256SUMS" "$HERE/receive_piece.sh" "$P/"
  echo "$i" > "$P/PIECE"
done < "$BUILD_DIR/parts/SHA256SUMS"
KIT=$STAGE_OUT/p$N/kit
mkdir -p "$KIT"
cp -r "$HERE"/install_offline.sh "$HERE"/build_models.py "$HERE"/loadgen.py "$HERE"/scraper.py \
      "$HERE"/acceptance.py "$HERE"/run_capture.sh "$HERE"/run_capture2.sh "$HERE"/tokenizer "$KIT"/
cp "$SCRIPTS"/gpu-capture.sh "$SCRIPTS"/gpu-sidecar.sh "$KIT"/   # ours: the plugin + sidecar capture
for i in $(seq 1 "$N"); do check_size "$STAGE_OUT/p$i" "$PIECE_MIB"; done
[ ${#EXTRA_WHEELS[@]} -eq 0 ] && [ ${#EXTRA_REQS[@]} -eq 0 ] || make_extra
rm -rf "$TREE" "$BUILD_DIR/xg" "$BUILD_DIR/parts" "$BUILD_DIR/stage.tar.xz"

echo "== done: $N pieces in $STAGE_OUT (listed in $EXCLUDE)"
for i in $(seq 1 "$N"); do echo "   p$i  $(mib_of "$STAGE_OUT/p$i") MiB"; done
echo "   archive sha256: $(for i in $(seq 1 "$N"); do cat "$STAGE_OUT"/p$i/stage.part.*; done | sha256sum | cut -c1-16)..."
echo "On the GPU host, one transfer per piece, in order, from the repository root:"
for i in $(seq 1 "$N"); do echo "   bash .gpu-stage/p$i/receive_piece.sh"; done
echo "then, in the transfer of p$N or any later one: bash /tmp/stage/kit/install_offline.sh" \
     "$([ -d "$STAGE_OUT/extra" ] && echo '--extra-wheels .gpu-stage/extra')"
