#!/usr/bin/env bash
# Builds the C++ GGML port of OmniVoice (omnivoice.cpp) for benchmarks/peers.py, from a checkout at a recorded
# commit, and converts a checkpoint with the port's own tools. Nothing of the port is kept in this project: the
# script clones it, applies one change (ggml_peer_threads.patch, beside this script) and builds it.
#
#   bash benchmarks/build_ggml_peer.sh --dest /work/peers/omnivoice.cpp --checkpoint /work/models/ckpt-full \
#       --python /work/peers/venv/bin/python
#   python benchmarks/peers.py ... --ggml-cli /work/peers/omnivoice.cpp/build/omnivoice-tts \
#       --ggml-models /work/peers/omnivoice.cpp/models
#
# What it does, each step skipped where it is already done (so it reruns on its own output):
#  1. clones --source (default the port's GitHub repository) into --dest and checks out --commit (4f33af8,
#     2026-07-21, "ggml: fork update": the commit the side-by-side run in BENCHMARKS.md was built from);
#  2. ggml: the port pins a commit (c044c6f) of its own fork, ServeurpersoCom/ggml, which was not reachable when
#     this was written and is not in ggml-org/ggml; by default the script clones upstream ggml-org/ggml at 9be3133
#     (2026-07-17, version 0.17.0: the nearest upstream commit before the pin, with every ggml function and
#     constant the port uses; the fork's own kernels, a fused snake activation and CUDA coverage, are missing,
#     so the CPU path runs the generic graph). `--ggml-commit pinned` takes the submodule as pinned instead;
#  3. applies ggml_peer_threads.patch: the port has no thread flag and its backend_cpu_n_threads() returns
#     hardware_concurrency() / 2 (1 on a 2-core machine); the patch reads the count from OMNIVOICE_CPP_THREADS
#     first, which peers.py sets to its --threads;
#  4. builds omnivoice-tts and quantize in Release with the port's defaults otherwise (GGML_NATIVE on). BLAS off:
#     the port's buildcpu.sh turns GGML_BLAS on, but only the CPU backend is scheduled, so BLAS is never used.
#     llamafile's matrix code is off as in upstream ggml (Q8_0 products take ggml_vec_dot_q8_0_q8_0 row by row);
#     --llamafile turns it on (about a third less CPU time in one loaded comparison: time both);
#  5. with --checkpoint (a Hugging Face folder: config.json, model.safetensors, audio_tokenizer/), links it as
#     checkpoints/OmniVoice, runs the port's convert.py (F32 GGUFs of the backbone and of the codec) with --python
#     (it needs numpy and gguf) and quantises the backbone to --quant (Q8_0) with the port's quantize tool;
#  6. writes --dest/peer-build.json (the commits, the patch's digest, the build flags), which peers.py reports.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
patch_file="$here/ggml_peer_threads.patch"
source_repo=https://github.com/ServeurpersoCom/omnivoice.cpp.git
commit=4f33af8
ggml_source=https://github.com/ggml-org/ggml.git
ggml_commit=9be3133
dest=""
checkpoint=""
python=python3
quant=Q8_0
llamafile=OFF
jobs=$(nproc)

usage() {
    awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"
    cat <<EOF

Options:
  --dest DIR            the port's checkout, its build/ and models/ (required)
  --checkpoint DIR      the checkpoint to convert (omit to build only)
  --python PY           the Python that runs convert.py, with numpy and gguf (default python3)
  --source REPO         the port's git repository, a URL or a local clone (default $source_repo)
  --commit REV          the port's commit (default $commit)
  --ggml-source REPO    ggml's git repository (default $ggml_source)
  --ggml-commit REV     ggml's commit, or 'pinned' for the port's own submodule (default $ggml_commit)
  --quant TYPE          the backbone GGUF's type (default $quant)
  --llamafile           build ggml with GGML_LLAMAFILE=ON
  --jobs N              build jobs (default $jobs)
EOF
}

fail() { echo "build_ggml_peer: $*" >&2; exit 1; }

while [ $# -gt 0 ]; do
    case "$1" in
        --dest) dest=${2:?--dest needs a folder}; shift 2 ;;
        --checkpoint) checkpoint=${2:?--checkpoint needs a folder}; shift 2 ;;
        --python) python=${2:?--python needs a program}; shift 2 ;;
        --source) source_repo=${2:?--source needs a repository}; shift 2 ;;
        --commit) commit=${2:?--commit needs a revision}; shift 2 ;;
        --ggml-source) ggml_source=${2:?--ggml-source needs a repository}; shift 2 ;;
        --ggml-commit) ggml_commit=${2:?--ggml-commit needs a revision}; shift 2 ;;
        --quant) quant=${2:?--quant needs a type}; shift 2 ;;
        --llamafile) llamafile=ON; shift ;;
        --jobs) jobs=${2:?--jobs needs a number}; shift 2 ;;
        -h|--help) usage; exit 0 ;;
        *) fail "unknown option $1 (--help lists the options)" ;;
    esac
done
[ -n "$dest" ] || fail "give --dest (the folder for the port's checkout; --help lists the options)"
[ -f "$patch_file" ] || fail "the thread-count patch is missing: $patch_file"
if [ -n "$checkpoint" ]; then
    [ -d "$checkpoint" ] || fail "no checkpoint folder $checkpoint"
    checkpoint=$(cd "$checkpoint" && pwd)
    for need in config.json model.safetensors audio_tokenizer; do
        [ -e "$checkpoint/$need" ] || fail "$checkpoint has no $need: give the Hugging Face folder of the checkpoint"
    done
    "$python" -c 'import gguf, numpy' 2>/dev/null \
        || fail "$python cannot import gguf and numpy, which the port's convert.py needs: pip install gguf numpy"
fi

for tool in git cmake c++; do
    command -v "$tool" >/dev/null || fail "$tool is not installed (Debian: apt-get install git cmake g++)"
done

# 1. the port at its commit
fresh=no
if [ -d "$dest/.git" ]; then
    echo "[port] using the checkout in $dest"
else
    [ ! -e "$dest" ] || [ -z "$(ls -A "$dest")" ] || fail "$dest exists and is not a git checkout: give a new folder"
    git clone --no-checkout "$source_repo" "$dest"
    fresh=yes
fi
dest=$(cd "$dest" && pwd)
want=$(git -C "$dest" rev-parse --verify --quiet "$commit^{commit}") \
    || { git -C "$dest" fetch origin && want=$(git -C "$dest" rev-parse --verify "$commit^{commit}"); } \
    || fail "commit $commit is not in $source_repo"
have=$(git -C "$dest" rev-parse --verify --quiet HEAD || true)
if [ "$fresh" = yes ]; then
    git -C "$dest" checkout --quiet --force --detach "$want"
elif [ "$have" != "$want" ]; then
    [ -z "$(git -C "$dest" status --porcelain --ignore-submodules=all)" ] \
        || fail "$dest has changes of its own and is not at $commit: give a new folder"
    git -C "$dest" checkout --quiet --detach "$want"
fi
echo "[port] $(git -C "$dest" log -1 --format='%h %cs %s')"

# 2. ggml
if [ "$ggml_commit" = pinned ]; then
    git -C "$dest" submodule update --init ggml
    ggml_source=$(git -C "$dest" config --file .gitmodules submodule.ggml.url)
else
    ggml_fresh=no
    if [ ! -e "$dest/ggml/.git" ]; then
        rmdir "$dest/ggml" 2>/dev/null || true
        git clone --no-checkout "$ggml_source" "$dest/ggml"
        ggml_fresh=yes
    fi
    ggml_want=$(git -C "$dest/ggml" rev-parse --verify --quiet "$ggml_commit^{commit}") \
        || { git -C "$dest/ggml" fetch origin && ggml_want=$(git -C "$dest/ggml" rev-parse --verify "$ggml_commit^{commit}"); } \
        || fail "ggml commit $ggml_commit is not in $ggml_source"
    if [ "$ggml_fresh" = yes ]; then
        git -C "$dest/ggml" checkout --quiet --force --detach "$ggml_want"
    elif [ "$(git -C "$dest/ggml" rev-parse HEAD)" != "$ggml_want" ]; then
        git -C "$dest/ggml" checkout --quiet --detach "$ggml_want"
    fi
fi
ggml_full=$(git -C "$dest/ggml" rev-parse HEAD)
echo "[ggml] $(git -C "$dest/ggml" log -1 --format='%h %cs %s') (the port pins $(git -C "$dest" ls-tree HEAD ggml | awk '{print substr($3, 1, 7)}'))"

# 3. the thread count from OMNIVOICE_CPP_THREADS
if git -C "$dest" apply --reverse --check "$patch_file" 2>/dev/null; then
    echo "[patch] already applied: $(basename "$patch_file")"
else
    git -C "$dest" apply --check "$patch_file" \
        || fail "$(basename "$patch_file") does not apply at this commit: backend_cpu_n_threads() in src/backend.h moved"
    git -C "$dest" apply "$patch_file"
    echo "[patch] applied: $(basename "$patch_file")"
fi

# 4. the build
cmake -S "$dest" -B "$dest/build" -DCMAKE_BUILD_TYPE=Release -DGGML_BLAS=OFF "-DGGML_LLAMAFILE=$llamafile" >/dev/null
cmake --build "$dest/build" --config Release -j "$jobs" --target omnivoice-tts quantize
cli="$dest/build/omnivoice-tts"
echo "[build] $("$cli" --help 2>&1 | head -n 1)"

# 5. the checkpoint through the port's own convert.py and quantize
if [ -n "$checkpoint" ]; then
    mkdir -p "$dest/checkpoints"
    ln -sfn "$checkpoint" "$dest/checkpoints/OmniVoice"
    (cd "$dest" && "$python" convert.py)
    base="$dest/models/omnivoice-base-F32.gguf"
    out="$dest/models/omnivoice-base-$quant.gguf"
    if [ -f "$out" ]; then
        echo "[quantize] skip: $(basename "$out") exists"
    else
        "$dest/build/quantize" "$base" "$out.tmp" "$quant"
        mv "$out.tmp" "$out"
    fi
fi

# 6. what was built, for peers.py (written whole, then renamed)
record="$dest/peer-build.json"
PORT_SOURCE=$source_repo PORT_COMMIT=$(git -C "$dest" rev-parse HEAD) GGML_SOURCE=$ggml_source GGML_COMMIT=$ggml_full \
GGML_PINNED=$(git -C "$dest" ls-tree HEAD ggml | awk '{print $3}') PATCH_FILE=$patch_file LLAMAFILE=$llamafile \
QUANT=$quant CHECKPOINT=$checkpoint python3 - "$record" <<'EOF_PY'
import hashlib, json, os, pathlib, sys
env = os.environ
patch = pathlib.Path(env["PATCH_FILE"])
record = {
    "port": {"source": env["PORT_SOURCE"], "commit": env["PORT_COMMIT"]},
    "ggml": {"source": env["GGML_SOURCE"], "commit": env["GGML_COMMIT"], "pinned_by_port": env["GGML_PINNED"]},
    "patch": {"file": f"benchmarks/{patch.name}", "sha256": hashlib.sha256(patch.read_bytes()).hexdigest()},
    "cmake": ["-DCMAKE_BUILD_TYPE=Release", "-DGGML_BLAS=OFF", f"-DGGML_LLAMAFILE={env['LLAMAFILE']}"],
    "quant": env["QUANT"], "checkpoint": env["CHECKPOINT"] or None,
}
temporary = pathlib.Path(sys.argv[1] + ".tmp")
temporary.write_text(json.dumps(record, indent=1), encoding="utf-8")
temporary.replace(sys.argv[1])
EOF_PY
echo "[done] $record"
echo "run it beside ours: python benchmarks/peers.py ... --ggml-cli $cli --ggml-models $dest/models --ggml-quant $quant"
