#!/usr/bin/env bash
# Train on a lent GPU, in one device call, the networks issues 47 and 52 wait for:
#   argkp            the ArgKP cross-encoder's recipe (scripts/train_argkp_judge.py, docs/judge.md)
#   argkp-all        the run first planned for it (every labelled negative, 2 epochs: --recipe all-negatives)
#   stance           the five fold stance models of the fp32 reference's cross-validation (scripts/train_stance.py
#                    fit --stop-at 1200, as `--stage cv --cv-stop-at 1200` asks; named as the cv stage looks for)
#
#   python bench/gpu_carry.py --training                       # here: .gpu-carry/ (model, ArgKP, stance examples)
#   bash bench/gpu_train.sh .gpu-carry "$OUT" argkp,stance     # there (device run, carry [".gpu-carry"])
#   bash bench/gpu_train.sh .gpu-carry /tmp/x argkp,stance --tiny   # here first: a few steps each, on the CPU
#
# Back here: argkp_ce_v1.npz -> berds_core/judges/weights/, stance_folds.tar -> bench/results/stance_cv/models/.
set -euo pipefail
carry=${1:-.gpu-carry}
out=${2:?output folder}
what=,${3:-argkp,stance},
tiny=${4:-}
export PYTHONUNBUFFERED=1 HF_HUB_OFFLINE=1 TOKENIZERS_PARALLELISM=false BERDS_ENCODING=fp32
py=${PYTHON:-python3}
dev=cuda
argkp_stop=()
stance_stop=1200
if [ "$tiny" = --tiny ]; then dev=cpu; argkp_stop=(--limit 30 --stop-at 2); stance_stop=2; fi
mkdir -p "$out"
work=$(mktemp -d)
[ "$dev" = cuda ] && nvidia-smi --query-gpu=name,memory.total --format=csv,noheader | tee "$out/gpu.txt"
t0=$(date +%s)
pids=()
argkp() {  # recipe, output file, log
  "$py" scripts/train_argkp_judge.py --recipe "$1" --device "$dev" --base-dir "$carry/minilm" --data "$carry/argkp" \
      --work "$work/argkp-$1" --out "$out/$2" --threads 2 "${argkp_stop[@]}" > "$out/$3" 2>&1
}
if [[ $what == *,argkp,* ]]; then argkp one-negative argkp_ce_v1.npz argkp.log & pids+=($!); fi
if [[ $what == *,argkp-all,* ]]; then argkp all-negatives argkp_ce_all.npz argkp_all.log & pids+=($!); fi
if [[ $what == *,stance,* ]]; then
  mkdir -p "$work/stance_cv"
  gunzip -c "$carry/stance_cv/dataset.json.gz" > "$work/stance_cv/dataset.json"
  cp "$carry/stance_cv/folds.json" "$work/stance_cv/"
  for f in 0 1 2 3 4; do
    "$py" scripts/train_stance.py fit --cached-dataset --device "$dev" --base-dir "$carry/minilm" \
        --work "$work/stance_cv" --fold "$f" --threads 2 --stop-at "$stance_stop" > "$work/fold$f.log" 2>&1 &
    pids+=($!)
  done
fi
rc=0
for p in "${pids[@]}"; do wait "$p" || rc=1; done
echo "trained in $(( $(date +%s) - t0 )) s, exit $rc" | tee "$out/done.txt"
tail -n 2 "$out"/*.log || true
if [[ $what == *,stance,* ]]; then
  cat "$work"/fold*.log > "$out/stance_folds.log"; tail -n 2 "$out/stance_folds.log"
  (cd "$work/stance_cv/models" && tar cf "$out/stance_folds.tar" ./*.npz)
fi
exit $rc
